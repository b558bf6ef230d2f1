package trap

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"entgo.io/ent/dialect"
	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/predicate"
	"github.com/flytrap/flytrap/ent/schematype"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/store/sqltext"
	"github.com/flytrap/flytrap/wire"
	"github.com/oklog/ulid/v2"
)

// sess is a session being changed by a batch: what the engine knows of it
// (detect.Session) and what the writer needs to store it.
type sess struct {
	detect.Session
	row      *ent.Session // nil until it exists in the database
	id       string
	org      string
	site     string
	ip       string
	first    time.Time
	addHits  int
	addTrips int
	addProms int
	// storedTraps is how many of Traps (which only grows) are stored: traps_triggered is
	// written, and its trap_sessions rows added, only when it grew.
	storedTraps int
	verdict     detect.Verdict
	// dirty says the lists or the state changed since the session was stored;
	// stored is the verdict as stored. An unchanged session costs only its counters.
	dirty  bool
	stored detect.Verdict
	// detection state before this batch, to tell detected from escalated
	wasDetected bool
	wasSeverity string
	key         string
}

// sourceHit is a hit that served a decoy whose token came back.
type sourceHit struct {
	session    string
	org        string
	receivedAt time.Time
	visible    bool // it served llms.txt or robots.txt: its links are text a person reads
}

// sourceHits loads the hits the batch's tokens point to: in this batch or already stored.
func (e *Engine) sourceHits(ctx context.Context, c *ent.Client, batch []*job) (map[string]sourceHit, error) {
	var want []string
	for _, j := range batch {
		for _, ref := range j.rec.refs {
			if ref.Origin == decoy.OriginHit && !slices.Contains(want, ref.HitID) {
				want = append(want, ref.HitID)
			}
		}
	}
	out := map[string]sourceHit{}
	if len(want) == 0 {
		return out, nil
	}
	load := func(list []string, window ...predicate.Hit) error {
		rows, err := c.Hit.Query().Where(append(window, hit.IDIn(list...))...).
			Select(hit.FieldID, hit.FieldSessionID, hit.FieldOrgID, hit.FieldReceivedAt, hit.FieldPath).All(ctx)
		if err != nil {
			return fmt.Errorf("load token sources: %w", err)
		}
		for _, h := range rows {
			out[h.ID] = sourceHit{session: h.SessionID, org: h.OrgID, receivedAt: h.ReceivedAt, visible: decoy.VisibleLinksAt(h.Path)}
		}
		return nil
	}
	// A hit's id is made with it (the listener, within seconds of received_at), so the ids'
	// own times bound where the hits are: named, on PostgreSQL with hits partitioned by day,
	// the query searches the partitions of those days instead of every one. A hit not found
	// there (its token is older than retention, or the hit was stored another way) is
	// looked for again without the bound.
	if from, to, ok := idTimes(want); ok {
		if err := load(want, hit.ReceivedAtGTE(from.Add(-sourceSlack)), hit.ReceivedAtLTE(to.Add(sourceSlack))); err != nil {
			return nil, err
		}
		var missing []string
		for _, id := range want {
			if _, ok := out[id]; !ok {
				missing = append(missing, id)
			}
		}
		want = missing
	}
	if len(want) > 0 {
		if err := load(want); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sourceSlack is how far a hit's received_at may be from its id's time and still be found
// by the bounded lookup (the listener makes both within the request's read timeout).
const sourceSlack = time.Hour

// idTimes is the earliest and latest time of the hit ids in list, if every one is a hit id.
func idTimes(list []string) (from, to time.Time, ok bool) {
	for i, id := range list {
		u, ok := ids.Parse(id, ids.Hit)
		if !ok {
			return time.Time{}, time.Time{}, false
		}
		t := ulid.Time(u.Time()).UTC() // UTC: SQLite compares times as text
		if i == 0 || t.Before(from) {
			from = t
		}
		if i == 0 || t.After(to) {
			to = t
		}
	}
	return from, to, len(list) > 0
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
		if s.key == key && rec.receivedAt.Sub(s.Last) <= e.cfg.SessionIdle {
			return s, nil
		}
	}
	idleSince := rec.receivedAt.Add(-e.cfg.SessionIdle)
	if vs, ok := e.visits.session(key); ok && vs.lastSeen.After(idleSince) {
		if s, err := e.loadSession(ctx, c, vs.id, batch); err == nil && s.Last.After(idleSince) {
			return s, nil
		}
	}
	id, err := e.openSession(ctx, c, rec, idleSince)
	if err != nil {
		return nil, err
	}
	if id != "" {
		return e.loadSession(ctx, c, id, batch)
	}
	s := &sess{
		id: ids.New(ids.Session), org: rec.org, site: rec.site, ip: rec.ip.String(), first: rec.receivedAt, key: key,
		Session: detect.Session{UA: rec.ua, Last: rec.receivedAt, State: schematype.SessionState{Signals: map[string]int{}}},
	}
	s.State.ProbePaths, s.State.ProbeAt = e.visits.takeProbes(key)
	return s, nil
}

// openSession is the id of the visitor's latest session seen since idleSince, or "" when
// it has none: asked for every hit of a new visitor, so in SQL of our own (one prepared
// text) rather than through ent, whose query builder cost more than the lookup itself.
func (e *Engine) openSession(ctx context.Context, c *ent.Client, rec *hitRecord, idleSince time.Time) (string, error) {
	rows, err := c.QueryContext(ctx, e.openSessionSQL, rec.org, rec.ip.String(), rec.ua, idleSince)
	if err != nil {
		return "", fmt.Errorf("find session: %w", err)
	}
	defer rows.Close()
	var id string
	if rows.Next() {
		if err := rows.Scan(&id); err != nil {
			return "", fmt.Errorf("find session: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("find session: %w", err)
	}
	return id, nil
}

// openSessionSQL is openSession's statement in dia's placeholders.
func openSessionSQL(dia string) string {
	ph := []any{"?", "?", "?", "?"}
	if dia == dialect.Postgres {
		ph = []any{"$1", "$2", "$3", "$4"}
	}
	return fmt.Sprintf("SELECT %s FROM %s WHERE %s = %s AND %s = %s AND %s = %s AND %s >= %s ORDER BY %s DESC LIMIT 1",
		session.FieldID, session.Table, session.FieldOrgID, ph[0], session.FieldSourceIP, ph[1],
		session.FieldUserAgent, ph[2], session.FieldLastSeen, ph[3], session.FieldLastSeen)
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
		row: row, id: row.ID, org: row.OrgID, site: row.SiteID, ip: row.SourceIP, first: row.FirstSeen,
		Session: detect.Session{
			UA: row.UserAgent, Last: row.LastSeen, Hits: row.HitCount,
			Fired: slices.Clone(row.SignalsFired), Traps: slices.Clone(row.TrapsTriggered),
			Model: row.ExtractedModel, Operator: row.ExtractedOperator, State: row.State,
		},
		wasDetected: row.State.Detected, wasSeverity: row.State.Severity, storedTraps: len(row.TrapsTriggered),
		stored: detect.Verdict{Classification: string(row.Classification), Score: row.Score,
			Confidence: row.Confidence, Severity: string(row.Severity)},
	}
	s.key = row.OrgID + "|" + row.SourceIP + "|" + row.UserAgent // the session's own visitor, whoever brought its token
	if s.State.Signals == nil {
		s.State.Signals = map[string]int{}
	}
	return s, nil
}

// touchSessions moves last_seen and hit_count of many sessions with few statements: the
// common case of a visitor's further hits, which would otherwise cost a statement each.
// Each statement joins the sessions by id to a list of their new values (UPDATE … FROM,
// SQLite 3.33 or later): a CASE per column would compare each row with every id, and a
// WITH clause costs SQLite a copy of the list to prepare. Lists come in chunks of powers
// of two (stmtChunks), so the writer's prepared statements cover every batch.
func (e *Engine) touchSessions(ctx context.Context, c *ent.Client, ss []*sess) error {
	if len(ss) == 0 {
		return nil
	}
	if len(ss) == 1 {
		return e.saveSession(ctx, c, ss[0])
	}
	args := make([]any, 0, min(len(ss), touchChunk)*3)
	for _, n := range stmtChunks(len(ss), touchChunk) {
		args = args[:0]
		for _, s := range ss[:n] {
			args = append(args, s.id, s.Last, s.addHits)
		}
		if _, err := c.ExecContext(ctx, e.sessionTouch(n), args...); err != nil {
			return fmt.Errorf("update sessions: %w", err)
		}
		ss = ss[n:]
	}
	return nil
}

// touchChunk is the most sessions one touch statement moves.
const touchChunk = 128

// sessionTouch is the statement that touches n sessions, made once per n.
func (e *Engine) sessionTouch(n int) string {
	if q, ok := e.sessionTouches.Load(n); ok {
		return q.(string)
	}
	var values strings.Builder
	sqltext.Values(&values, e.dialect == dialect.Postgres, n, "", "::timestamptz", "::bigint")
	// Both databases name the columns of a VALUES list column1, column2, …
	q := "UPDATE " + session.Table + " SET " + session.FieldLastSeen + " = v.column2, " +
		session.FieldHitCount + " = " + session.FieldHitCount + " + v.column3 FROM (VALUES " + values.String() +
		") AS v WHERE " + session.Table + "." + session.FieldID + " = v.column1"
	e.sessionTouches.Store(n, q)
	return q
}

// createSessions inserts the batch's new sessions, a multi-row INSERT per chunk (ent's
// CreateBulk: its hooks keep the counters, tally.SessionHook). A public honeypot's
// visitors are mostly new (~2 hits a session), and one INSERT per session cost the
// writer a statement each; chunks of powers of two keep the statement texts few, so
// the writer's prepared statements cover them (store.Prepared).
func (e *Engine) createSessions(ctx context.Context, c *ent.Client, ss []*sess) error {
	for _, n := range stmtChunks(len(ss), createChunk) {
		b := make([]*ent.SessionCreate, n)
		for i, s := range ss[:n] {
			b[i] = sessionCreate(c, s)
		}
		if err := c.Session.CreateBulk(b...).Exec(ctx); err != nil {
			return fmt.Errorf("create sessions: %w", err)
		}
		ss = ss[n:]
	}
	return nil
}

// createChunk is the most sessions one INSERT creates: some 3,000 parameters, well
// within SQLite's 32,766.
const createChunk = 128

// sessionCreate is the creation of the new session s.
func sessionCreate(c *ent.Client, s *sess) *ent.SessionCreate {
	v := s.verdict
	return c.Session.Create().SetID(s.id).SetOrgID(s.org).SetSiteID(s.site).SetSourceIP(s.ip).SetUserAgent(s.UA).
		SetFirstSeen(s.first).SetLastSeen(s.Last).SetHitCount(s.Hits).SetSignalsFired(s.Fired).
		SetTrapsTriggered(s.Traps).SetTripwiresFired(s.addTrips).SetPromptsCaptured(s.addProms).
		SetExtractedModel(s.Model).SetExtractedOperator(s.Operator).SetState(s.State).
		SetClassification(session.Classification(v.Classification)).SetScore(v.Score).
		SetConfidence(v.Confidence).SetSeverity(session.Severity(v.Severity))
}

// saveSession writes a stored session's changes, with atomic counters.
func (e *Engine) saveSession(ctx context.Context, c *ent.Client, s *sess) error {
	v := s.verdict
	u := c.Session.Update().Where(session.ID(s.id)).SetLastSeen(s.Last).AddHitCount(s.addHits)
	if s.addTrips > 0 {
		u.AddTripwiresFired(s.addTrips)
	}
	if s.addProms > 0 {
		u.AddPromptsCaptured(s.addProms)
	}
	if s.dirty {
		u.SetSignalsFired(s.Fired).SetExtractedModel(s.Model).SetExtractedOperator(s.Operator).SetState(s.State)
		if len(s.Traps) != s.storedTraps {
			u.SetTrapsTriggered(s.Traps)
		}
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
	s.State.Detected, s.State.Severity, s.dirty = true, v.Severity, true
	return typ
}

// ThreatData is the data of threat.* events, as the API document's table gives it.
func ThreatData(s *sess) map[string]any {
	traps := s.Traps
	if traps == nil {
		traps = []string{}
	}
	return wire.Object(wire.Threat{
		Classification: strings.ToLower(s.verdict.Classification), ExtractedModel: s.Model, ExtractedOperator: s.Operator,
		HitCount: s.Hits, Score: s.verdict.Score, SessionID: s.id, Severity: s.verdict.Severity, SourceIP: s.ip,
		TrapsTriggered: traps, TripwiresFired: tripwires(s),
	})
}

func tripwires(s *sess) int {
	n := 0
	for name, c := range s.State.Signals {
		if detect.IsTripwire(name) {
			n += c
		}
	}
	return n
}

// clone copies s deeply enough that changing the copy leaves s as it was.
func (s *sess) clone() *sess {
	c := *s
	c.Session = s.Session.Clone()
	return &c
}

// observed takes in what detect.Observe made of one of the session's hits.
func (s *sess) observed(next detect.Session, out detect.Outcome) {
	s.Session = next
	s.dirty = s.dirty || out.Changed
	s.addTrips += out.Tripwires
	s.addProms += len(out.Prompts)
	s.addHits++
	s.verdict = out.Verdict
}

// committed marks s as stored: what the next batch adds starts from here.
func (s *sess) committed() {
	if s.row == nil {
		s.row = &ent.Session{ID: s.id}
	}
	s.addHits, s.addTrips, s.addProms, s.dirty, s.stored = 0, 0, 0, false, s.verdict
	s.storedTraps = len(s.Traps)
	s.wasDetected, s.wasSeverity = s.State.Detected, s.State.Severity
}
