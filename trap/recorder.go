package trap

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"entgo.io/ent/dialect"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/schematype"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/wire"
)

// sess is a session being changed by a batch.
type sess struct {
	row      *ent.Session // nil until it exists in the database
	id       string
	org      string
	site     string
	ip, ua   string
	first    time.Time
	last     time.Time
	hits     int
	addHits  int
	addTrips int
	addProms int
	signals  []string
	traps    []string
	model    string
	operator string
	state    schematype.SessionState
	verdict  detect.Verdict
	// dirty says the lists or the state changed since the session was stored;
	// stored is the verdict as stored. An unchanged session costs only its counters.
	dirty  bool
	stored detect.Verdict
	// detection state before this batch, to tell detected from escalated
	wasDetected bool
	wasSeverity string
	key         string
}

// firing is one signal fired by a hit, with its evidence.
type firing struct {
	name      string
	placement string
	source    string
	delay     *int64
	detail    string
}

// writeBatch records a batch of hits in one transaction: sessions found or made,
// hits, signals and prompts inserted, sessions judged, threat events appended.
func (e *Engine) writeBatch(ctx context.Context, batch []*job) error {
	ctx = privacy.DecisionContext(ctx, privacy.Allow)
	tx, err := e.client.Tx(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	c := tx.Client()

	sources, err := e.sourceHits(ctx, c, batch)
	if err != nil {
		return err
	}
	sessions := map[string]*sess{}
	var order []*sess
	hits := make([][]any, 0, len(batch))
	var signals []*ent.SignalCreate
	var prompts []*ent.PromptCreate
	for _, j := range batch {
		rec := j.rec
		s, err := e.sessionFor(ctx, c, rec, sources, sessions)
		if err != nil {
			return err
		}
		if _, seen := sessions[s.id]; !seen {
			sessions[s.id] = s
			order = append(order, s)
		}
		fired, found := e.judgeHit(s, rec, sources)
		names := make([]string, 0, len(fired))
		for _, f := range fired {
			names = append(names, f.name)
			sc := c.Signal.Create().SetOrgID(rec.org).SetSessionID(s.id).SetHitID(rec.id).SetName(f.name).
				SetTripwire(detect.IsTripwire(f.name)).SetPlacement(f.placement).SetSourceHitID(f.source).
				SetDetail(bound(f.detail, 2048)).SetCreatedAt(rec.receivedAt)
			if f.delay != nil {
				sc.SetDelayMs(*f.delay)
			}
			signals = append(signals, sc)
		}
		for _, p := range found {
			prompts = append(prompts, c.Prompt.Create().SetOrgID(rec.org).SetSessionID(s.id).SetHitID(rec.id).
				SetText(p.prompt.Text).SetHash(p.prompt.Hash).SetModel(bound(p.prompt.Model, 100)).
				SetOperator(bound(p.prompt.Operator, 200)).SetSource(p.source).SetCreatedAt(rec.receivedAt))
		}
		if rec.rowErr != nil {
			return rec.rowErr
		}
		sigs, err := signalsJSON(names)
		if err != nil {
			return err
		}
		rec.row[hitColSession], rec.row[hitColSignals] = s.id, sigs
		hits = append(hits, rec.row)
	}
	threats := make([]string, len(order))
	var touched []*sess // stored sessions whose only change is a later last_seen and more hits
	for i, s := range order {
		threats[i] = threatType(s)
		if s.row != nil && !s.dirty && s.verdict == s.stored && s.addTrips == 0 && s.addProms == 0 {
			touched = append(touched, s)
			continue
		}
		if err := e.saveSession(ctx, c, s); err != nil {
			return err
		}
	}
	if err := e.touchSessions(ctx, c, touched); err != nil {
		return err
	}
	if err := e.insertHits(ctx, c, hits); err != nil {
		return err
	}
	if len(signals) > 0 {
		if err := c.Signal.CreateBulk(signals...).Exec(ctx); err != nil {
			return fmt.Errorf("insert signals: %w", err)
		}
	}
	if len(prompts) > 0 {
		if err := c.Prompt.CreateBulk(prompts...).Exec(ctx); err != nil {
			return fmt.Errorf("insert prompts: %w", err)
		}
	}
	for i, s := range order {
		if threats[i] == "" {
			continue
		}
		if _, err := event.Append(ctx, tx, s.org, threats[i], ThreatData(s)); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	for _, s := range order {
		e.visits.setSession(s.key, visitorSession{id: s.id, lastSeen: s.last})
		s.committed()
		e.recent.Add(s.id, s)
	}
	e.written.Add(int64(len(batch)))
	return nil
}

// hitColumns are the columns of a hit's row (see hitRow), in its order.
var hitColumns = []string{
	hit.FieldID, hit.FieldOrgID, hit.FieldSessionID, hit.FieldTrapID, hit.FieldMethod, hit.FieldPath,
	hit.FieldQuery, hit.FieldHeaders, hit.FieldBody, hit.FieldBodyTruncated, hit.FieldSourceIP,
	hit.FieldUserAgent, hit.FieldReceivedAt, hit.FieldReceivedHour, hit.FieldKind, hit.FieldStatus, hit.FieldSignals,
}

// Where in a hit's row the writer puts what only it knows.
const (
	hitColSession = 2
	hitColSignals = 16
)

// hitRow is rec's row in the hits table, in hitColumns order, holding what ent would
// write: the JSON headers encoded as ent encodes a JSON field, received_hour as the
// hitHour hook (ent/schema/hooks.go) derives it, trap_id NULL without a trap. The
// listener makes it in the request's goroutine, sparing the single writer, which fills
// in the session and the signals. The error is what ent's validators say of the row: a
// hit they refuse fails in the writer, as it did when ent wrote hits.
func hitRow(rec *hitRecord) ([]any, error) {
	headers, err := json.Marshal(rec.headers)
	if err != nil {
		return nil, fmt.Errorf("marshal hit headers: %w", err)
	}
	method, ip := bound(rec.method, 16), rec.ip.String()
	var trapID any
	if rec.trap != nil {
		trapID = rec.trap.ID
	}
	row := []any{rec.id, rec.org, nil, trapID, method, rec.path, rec.query, headers, rec.body, rec.truncated,
		ip, rec.ua, rec.receivedAt, rec.receivedAt.Unix() / 3600, rec.kind, rec.status, nil}
	return row, checkHit(rec, method, ip)
}

// checkHit runs ent's validators of the hit's fields.
func checkHit(rec *hitRecord, method, ip string) error {
	for _, f := range []struct {
		name  string
		valid func(string) error
		value string
	}{
		{hit.FieldID, hit.IDValidator, rec.id},
		{hit.FieldOrgID, hit.OrgIDValidator, rec.org},
		{hit.FieldMethod, hit.MethodValidator, method},
		{hit.FieldPath, hit.PathValidator, rec.path},
		{hit.FieldQuery, hit.QueryValidator, rec.query},
		{hit.FieldBody, hit.BodyValidator, rec.body},
		{hit.FieldSourceIP, hit.SourceIPValidator, ip},
		{hit.FieldUserAgent, hit.UserAgentValidator, rec.ua},
	} {
		if err := f.valid(f.value); err != nil {
			return fmt.Errorf("hit %s: %w", f.name, err)
		}
	}
	return hit.KindValidator(hit.Kind(rec.kind))
}

// noSignals is the signals column of a hit that fired none, as ent encodes it. Rows share
// it: the drivers only read their arguments.
var noSignals = []byte("[]")

// signalsJSON is a hit's signals column.
func signalsJSON(names []string) ([]byte, error) {
	if len(names) == 0 {
		return noSignals, nil
	}
	b, err := json.Marshal(names)
	if err != nil {
		return nil, fmt.Errorf("marshal hit signals: %w", err)
	}
	return b, nil
}

// hitChunk is the most rows one INSERT carries: 64 × 17 parameters stay far below
// SQLite's limit (32766) and PostgreSQL's (65535), and few statement texts are cached.
const hitChunk = 64

// insertHits inserts hit rows with one multi-row INSERT per hitChunk rows. It bypasses
// ent, whose per-row mutation objects, hooks and privacy checks cost the single writer
// more than the database's own work. That is sound for the recorder alone: it writes as
// the system, which the privacy policy allows anyway, and hitRow does what the one hit
// hook does (received_hour). TestHitRowsAsEntWritesThem holds the rows to ent's.
func (e *Engine) insertHits(ctx context.Context, c *ent.Client, rows [][]any) error {
	args := make([]any, 0, min(len(rows), hitChunk)*len(hitColumns))
	for len(rows) > 0 {
		n := min(len(rows), hitChunk)
		args = args[:0]
		for _, row := range rows[:n] {
			args = append(args, row...)
		}
		if _, err := c.ExecContext(ctx, e.hitInsert(n), args...); err != nil {
			return fmt.Errorf("insert hits: %w", err)
		}
		rows = rows[n:]
	}
	return nil
}

// hitInsert is the INSERT statement of n hit rows, made once per n.
func (e *Engine) hitInsert(n int) string {
	if q, ok := e.hitInserts.Load(n); ok {
		return q.(string)
	}
	var b strings.Builder
	b.WriteString("INSERT INTO " + hit.Table + " (" + strings.Join(hitColumns, ", ") + ") VALUES ")
	p := 0
	for r := range n {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for i := range hitColumns {
			if i > 0 {
				b.WriteString(", ")
			}
			p++
			if e.dialect == dialect.Postgres {
				b.WriteString("$" + strconv.Itoa(p))
			} else {
				b.WriteByte('?')
			}
		}
		b.WriteByte(')')
	}
	q := b.String()
	e.hitInserts.Store(n, q)
	return q
}

// sourceHit is a hit that served a decoy whose token came back.
type sourceHit struct {
	session    string
	org        string
	receivedAt time.Time
}

// sourceHits loads the hits the batch's tokens point to: in this batch or already stored.
func (e *Engine) sourceHits(ctx context.Context, c *ent.Client, batch []*job) (map[string]sourceHit, error) {
	var want []string
	for _, j := range batch {
		for _, ref := range j.rec.refs {
			if !slices.Contains(want, ref.HitID) {
				want = append(want, ref.HitID)
			}
		}
	}
	out := map[string]sourceHit{}
	if len(want) == 0 {
		return out, nil
	}
	rows, err := c.Hit.Query().Where(hit.IDIn(want...)).
		Select(hit.FieldID, hit.FieldSessionID, hit.FieldOrgID, hit.FieldReceivedAt).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("load token sources: %w", err)
	}
	for _, h := range rows {
		out[h.ID] = sourceHit{session: h.SessionID, org: h.OrgID, receivedAt: h.ReceivedAt}
	}
	return out, nil
}

// sessionFor finds the session a hit belongs to: the session that received a token
// it carries (whatever its address), else the visitor's open session, else a new one.
func (e *Engine) sessionFor(ctx context.Context, c *ent.Client, rec *hitRecord, sources map[string]sourceHit, batch map[string]*sess) (*sess, error) {
	key := visitorKey(rec.org, rec.ip, rec.ua)
	for _, ref := range rec.refs {
		if src, ok := sources[ref.HitID]; ok && src.org == rec.org && src.session != "" {
			return e.loadSession(ctx, c, src.session, batch)
		}
	}
	for _, s := range batch { // a session this batch made or touched
		if s.key == key && rec.receivedAt.Sub(s.last) <= e.cfg.SessionIdle {
			return s, nil
		}
	}
	idleSince := rec.receivedAt.Add(-e.cfg.SessionIdle)
	if vs, ok := e.visits.session(key); ok && vs.lastSeen.After(idleSince) {
		if s, err := e.loadSession(ctx, c, vs.id, batch); err == nil && s.last.After(idleSince) {
			return s, nil
		}
	}
	row, err := c.Session.Query().
		Where(session.OrgID(rec.org), session.SourceIP(rec.ip.String()), session.UserAgent(rec.ua), session.LastSeenGTE(idleSince)).
		Order(ent.Desc(session.FieldLastSeen)).First(ctx)
	if err != nil && !ent.IsNotFound(err) {
		return nil, fmt.Errorf("find session: %w", err)
	}
	if row != nil {
		return e.loadSession(ctx, c, row.ID, batch)
	}
	s := &sess{
		id: ids.New(ids.Session), org: rec.org, site: rec.site, ip: rec.ip.String(), ua: rec.ua,
		first: rec.receivedAt, last: rec.receivedAt, key: key,
		state: schematype.SessionState{Signals: map[string]int{}},
	}
	s.state.ProbePaths = e.visits.takeProbes(key)
	return s, nil
}

func (e *Engine) loadSession(ctx context.Context, c *ent.Client, id string, batch map[string]*sess) (*sess, error) {
	if s, ok := batch[id]; ok {
		return s, nil
	}
	if s, ok := e.recent.Get(id); ok {
		return s.clone(), nil // a copy: the batch may still roll back
	}
	row, err := c.Session.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("load session %s: %w", id, err)
	}
	s := &sess{
		row: row, id: row.ID, org: row.OrgID, site: row.SiteID, ip: row.SourceIP, ua: row.UserAgent,
		first: row.FirstSeen, last: row.LastSeen, hits: row.HitCount,
		signals: slices.Clone(row.SignalsFired), traps: slices.Clone(row.TrapsTriggered),
		model: row.ExtractedModel, operator: row.ExtractedOperator, state: row.State,
		wasDetected: row.State.Detected, wasSeverity: row.State.Severity,
		stored: detect.Verdict{Classification: string(row.Classification), Score: row.Score,
			Confidence: row.Confidence, Severity: string(row.Severity)},
	}
	s.key = row.OrgID + "|" + row.SourceIP + "|" + row.UserAgent // the session's own visitor, whoever brought its token
	if s.state.Signals == nil {
		s.state.Signals = map[string]int{}
	}
	return s, nil
}

type capturedPrompt struct {
	prompt detect.Prompt
	source string
}

// judgeHit fires the hit's signals, updates the session with it, and judges the session anew.
func (e *Engine) judgeHit(s *sess, rec *hitRecord, sources map[string]sourceHit) ([]firing, []capturedPrompt) {
	var fired []firing
	fire := func(f firing) {
		s.dirty = true
		fired = append(fired, f)
		s.state.Signals[f.name]++
		if !slices.Contains(s.signals, f.name) {
			s.signals = append(s.signals, f.name)
		}
		if detect.IsTripwire(f.name) {
			s.addTrips++
		}
	}
	once := func(name, detail string) {
		if s.state.Signals[name] == 0 {
			fire(firing{name: name, detail: detail})
		}
	}
	// Who this request says it is: a token may bring another client into the session.
	client := detect.LookupUA(rec.ua)
	if sig := detect.UASignal(client); sig != "" {
		once(sig, client.Name)
	}
	if detect.UnverifiedClaim(client, rec.ip) {
		once(detect.SignalUnverifiedBotClaim, client.Name+" from "+rec.ip.String())
	}

	var found []capturedPrompt
	for _, ref := range rec.refs {
		src, ok := sources[ref.HitID]
		if !ok || src.org != rec.org {
			continue // a token of another organization, or of a hit not stored: ignore it
		}
		f := firing{source: ref.HitID, placement: placementOf(ref), detail: rec.method + " " + rec.path}
		delay := rec.receivedAt.Sub(src.receivedAt).Milliseconds()
		f.delay = &delay
		switch ref.Purpose {
		case decoy.Callback:
			f.name = detect.SignalCallbackHit
		case decoy.Challenge:
			f.name = detect.SignalCallbackHit
			if decoy.ChallengeAnswered(e.key, ref, rec.query+"\n"+rec.body) {
				f.name, f.detail = detect.SignalInjectionFollowed, "computed the challenge: "+decoy.ChallengeAnswer(e.key, ref)
			}
		case decoy.Canary:
			f.name, f.detail = detect.SignalInjectionFollowed, "echoed the canary phrase"
		case decoy.Sink:
			f.name = detect.SignalCallbackHit
			if rec.method != "GET" && rec.method != "HEAD" && rec.body != "" {
				f.name, f.detail = detect.SignalInjectionFollowed, "posted to the sink it was told to"
			}
			for _, cand := range promptCandidates(rec) {
				if p, ok := detect.AnalyzePrompt(cand.text); ok {
					found = append(found, capturedPrompt{prompt: p, source: cand.source})
				}
			}
		case decoy.Credential:
			f.name, f.detail = detect.SignalCredentialUsed, "used the planted credential"
		default:
			f.name = detect.SignalCallbackHit
		}
		fire(f)
		if sig := detect.FollowUpSignal(time.Duration(delay) * time.Millisecond); sig != "" {
			fire(firing{name: sig, source: ref.HitID, delay: &delay})
		}
	}
	for _, p := range found {
		s.dirty = true
		fire(firing{name: detect.SignalSystemPromptLeaked, placement: "sink", detail: "prompt " + p.prompt.Hash[:12] + " via " + p.source})
		if p.prompt.Model != "" {
			s.model = p.prompt.Model
		}
		if p.prompt.Operator != "" {
			s.operator = p.prompt.Operator
		}
	}
	s.addProms += len(found)
	if rec.tool != "" {
		fire(firing{name: detect.SignalToolInvoked, placement: "mcp_tool", detail: rec.tool + " " + rec.toolArgs})
	}
	switch {
	case rec.disallow != nil || (rec.trap != nil && rec.trap.Type == "robots"):
		now := rec.receivedAt
		s.state.RobotsAt, s.state.Disallowed, s.dirty = &now, rec.disallow, true
	case s.state.RobotsAt != nil && disallowed(s.state.Disallowed, rec.path):
		once(detect.SignalRobotsDisallowIgnored, rec.path)
	}
	for _, p := range rec.linked {
		if len(s.state.Linked) < maxLinked && !slices.Contains(s.state.Linked, p) {
			s.state.Linked, s.dirty = append(s.state.Linked, p), true
		}
	}
	if isProbe(rec) && !slices.Contains(s.state.Linked, rec.path) && len(s.state.ProbePaths) < maxProbes && !slices.Contains(s.state.ProbePaths, rec.path) {
		s.state.ProbePaths, s.dirty = append(s.state.ProbePaths, rec.path), true
	}
	if len(s.state.ProbePaths) >= detect.ProbingThreshold {
		once(detect.SignalSystematicProbing, fmt.Sprintf("%d unknown paths", len(s.state.ProbePaths)))
	}

	s.hits++
	s.addHits++
	if rec.receivedAt.After(s.last) {
		s.last = rec.receivedAt
	}
	if rec.trap != nil && !slices.Contains(s.traps, rec.trap.ID) {
		s.traps, s.dirty = append(s.traps, rec.trap.ID), true
	}
	s.verdict = detect.Judge(detect.Evidence{Signals: s.state.Signals, Agent: detect.LookupUA(s.ua), Hits: s.hits})
	return fired, found
}

func placementOf(ref decoy.TokenRef) string {
	return fmt.Sprintf("%s#%d", ref.Purpose, ref.Index)
}

// maxLinked bounds the linked paths a session remembers.
const maxLinked = 256

// browserAutoPaths are asked for by browsers on their own, never by a person's choice.
var browserAutoPaths = []string{"/favicon.ico", "/apple-touch-icon", "/browserconfig.xml", "/site.webmanifest", "/manifest.json", "/.well-known/"}

// isProbe reports whether an unknown path counts toward systematic probing: a link
// followed from one of our own pages (Referer on the same host) is a person browsing,
// and what browsers fetch by themselves is nobody's probe.
func isProbe(rec *hitRecord) bool {
	if rec.kind != "not_found" {
		return false
	}
	for _, p := range browserAutoPaths {
		if strings.HasPrefix(rec.path, p) {
			return false
		}
	}
	if ref := firstHeader(rec.headers, "Referer"); ref != "" {
		if u, err := url.Parse(ref); err == nil && u.Host != "" && strings.EqualFold(u.Host, rec.host) {
			return false
		}
	}
	return true
}

func firstHeader(h map[string][]string, name string) string {
	if vs := h[name]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

func disallowed(paths []string, p string) bool {
	for _, d := range paths {
		if d != "" && strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

type candidate struct{ text, source string }

// promptCandidates are the texts in a request that may be a leaked system prompt:
// JSON string fields, form fields, query parameters, and the plain body.
func promptCandidates(rec *hitRecord) []candidate {
	var out []candidate
	add := func(text, source string) {
		if len(strings.TrimSpace(text)) >= 20 && len(out) < 16 {
			out = append(out, candidate{text, source})
		}
	}
	body := strings.TrimSpace(rec.body)
	switch {
	case strings.HasPrefix(body, "{") || strings.HasPrefix(body, "["):
		for _, s := range jsonStrings(body, 16) {
			add(s, "json_field")
		}
	}
	if form, err := url.ParseQuery(body); err == nil && !strings.HasPrefix(body, "{") && strings.Contains(body, "=") {
		for _, vs := range form {
			for _, v := range vs {
				add(v, "form_field")
			}
		}
	} else if body != "" && !strings.HasPrefix(body, "{") && !strings.HasPrefix(body, "[") {
		add(body, "body")
	}
	if q, err := url.ParseQuery(rec.query); err == nil {
		for _, vs := range q {
			for _, v := range vs {
				add(v, "query")
			}
		}
	}
	return out
}

// touchSessions moves last_seen and hit_count of many sessions in one statement: the
// common case of a visitor's further hits, which would otherwise cost a statement each.
// It joins the sessions by id to a list of their new values (UPDATE … FROM, SQLite 3.33
// or later): a CASE per column would compare each row with every id, and a WITH clause
// costs SQLite a copy of the list to prepare.
func (e *Engine) touchSessions(ctx context.Context, c *ent.Client, ss []*sess) error {
	if len(ss) == 0 {
		return nil
	}
	if len(ss) == 1 {
		return e.saveSession(ctx, c, ss[0])
	}
	args := make([]any, 0, len(ss)*3)
	n := 0
	ph := func(cast string) string {
		n++
		if e.dialect == dialect.Postgres {
			return fmt.Sprintf("$%d%s", n, cast)
		}
		return "?"
	}
	var values strings.Builder
	for i, s := range ss {
		if i > 0 {
			values.WriteString(", ")
		}
		fmt.Fprintf(&values, "(%s, %s, %s)", ph(""), ph("::timestamptz"), ph("::bigint"))
		args = append(args, s.id, s.last, s.addHits)
	}
	// Both databases name the columns of a VALUES list column1, column2, …
	q := "UPDATE " + session.Table + " SET " + session.FieldLastSeen + " = v.column2, " +
		session.FieldHitCount + " = " + session.FieldHitCount + " + v.column3 FROM (VALUES " + values.String() +
		") AS v WHERE " + session.Table + "." + session.FieldID + " = v.column1"
	if _, err := c.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("update sessions: %w", err)
	}
	return nil
}

// saveSession writes a session's changes: created, or updated with atomic counters.
func (e *Engine) saveSession(ctx context.Context, c *ent.Client, s *sess) error {
	v := s.verdict
	if s.row == nil {
		err := c.Session.Create().SetID(s.id).SetOrgID(s.org).SetSiteID(s.site).SetSourceIP(s.ip).SetUserAgent(s.ua).
			SetFirstSeen(s.first).SetLastSeen(s.last).SetHitCount(s.hits).SetSignalsFired(s.signals).
			SetTrapsTriggered(s.traps).SetTripwiresFired(s.addTrips).SetPromptsCaptured(s.addProms).
			SetExtractedModel(s.model).SetExtractedOperator(s.operator).SetState(s.state).
			SetClassification(session.Classification(v.Classification)).SetScore(v.Score).
			SetConfidence(v.Confidence).SetSeverity(session.Severity(v.Severity)).Exec(ctx)
		if err != nil {
			return fmt.Errorf("create session: %w", err)
		}
		return nil
	}
	u := c.Session.Update().Where(session.ID(s.id)).SetLastSeen(s.last).AddHitCount(s.addHits)
	if s.addTrips > 0 {
		u.AddTripwiresFired(s.addTrips)
	}
	if s.addProms > 0 {
		u.AddPromptsCaptured(s.addProms)
	}
	if s.dirty {
		u.SetSignalsFired(s.signals).SetTrapsTriggered(s.traps).SetExtractedModel(s.model).
			SetExtractedOperator(s.operator).SetState(s.state)
	}
	if v != s.stored {
		u.SetClassification(session.Classification(v.Classification)).SetScore(v.Score).
			SetConfidence(v.Confidence).SetSeverity(session.Severity(v.Severity))
	}
	err := u.Exec(ctx)
	if err != nil {
		return fmt.Errorf("update session: %w", err)
	}
	return nil
}

// threatType says which threat event the batch's changes to s call for: threat.detected
// when it first crossed the detection threshold, threat.escalated when its severity rose
// since it was last reported, or none. It records the report in the session's state.
func threatType(s *sess) string {
	v := s.verdict
	if !detect.Detected(v) {
		return ""
	}
	typ := event.ThreatEscalated
	switch {
	case !s.wasDetected:
		typ = event.ThreatDetected
	case detect.SeverityRank(v.Severity) <= detect.SeverityRank(s.wasSeverity):
		return ""
	}
	s.state.Detected, s.state.Severity, s.dirty = true, v.Severity, true
	return typ
}

// ThreatData is the data of threat.* events: the session's wire.Threat.
func ThreatData(s *sess) map[string]any {
	traps := s.traps
	if traps == nil {
		traps = []string{}
	}
	return wire.Object(wire.Threat{
		Classification: strings.ToLower(s.verdict.Classification), ExtractedModel: s.model, ExtractedOperator: s.operator,
		HitCount: s.hits, Score: s.verdict.Score, SessionID: s.id, Severity: s.verdict.Severity, SourceIP: s.ip,
		TrapsTriggered: traps, TripwiresFired: tripwires(s),
	})
}

func tripwires(s *sess) int {
	n := 0
	for name, c := range s.state.Signals {
		if detect.IsTripwire(name) {
			n += c
		}
	}
	return n
}

// jsonStrings collects up to max string values of a JSON document, depth first.
func jsonStrings(doc string, max int) []string {
	var v any
	if json.Unmarshal([]byte(doc), &v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		if len(out) >= max {
			return
		}
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(v[k])
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return out
}

// clone copies s deeply enough that changing the copy leaves s as it was.
func (s *sess) clone() *sess {
	c := *s
	c.signals = slices.Clone(s.signals)
	c.traps = slices.Clone(s.traps)
	c.state.Signals = maps.Clone(s.state.Signals)
	c.state.Disallowed = slices.Clone(s.state.Disallowed)
	c.state.Linked = slices.Clone(s.state.Linked)
	c.state.ProbePaths = slices.Clone(s.state.ProbePaths)
	return &c
}

// committed marks s as stored: what the next batch adds starts from here.
func (s *sess) committed() {
	if s.row == nil {
		s.row = &ent.Session{ID: s.id}
	}
	s.addHits, s.addTrips, s.addProms, s.dirty, s.stored = 0, 0, 0, false, s.verdict
	s.wasDetected, s.wasSeverity = s.state.Detected, s.state.Severity
}
