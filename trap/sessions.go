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
	"github.com/flytrap/flytrap/record"
	"github.com/flytrap/flytrap/wire"
	"github.com/oklog/ulid/v2"
)

// sess is a session being changed by a batch: the session as the writer stores it
// (record.Session, which embeds what the engine knows of it, detect.Session), and what the
// engine needs to report it.
type sess struct {
	record.Session
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

// sourceHits loads the hits the batch's tokens point to that are stored already. A token
// whose hit is earlier in the batch (journaled hits are applied after their answers, so a
// visitor may follow a link before its page's hit is stored) is found as the writer goes
// (batchSource).
func (e *Engine) sourceHits(ctx context.Context, c *ent.Client, batch []*job) (map[string]sourceHit, error) {
	var want []string
	var inBatch map[string]bool
	for _, j := range batch {
		for _, ref := range j.rec.refs {
			if ref.Origin != decoy.OriginHit || slices.Contains(want, ref.HitID) {
				continue
			}
			if inBatch == nil {
				inBatch = make(map[string]bool, len(batch))
				for _, j := range batch {
					inBatch[j.rec.ID] = true
				}
			}
			if !inBatch[ref.HitID] {
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

// batchSource notes a hit of the batch, once its session is known, as the source of the
// tokens later hits of the batch bring back.
func batchSource(sources map[string]sourceHit, rec *hitRecord, session string) {
	sources[rec.ID] = sourceHit{session: session, org: rec.Org, receivedAt: rec.At, visible: decoy.VisibleLinksAt(rec.Path)}
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
	key := visitorKey(rec.Org, rec.IP, rec.UA)
	for _, ref := range rec.refs {
		if src, ok := sources[ref.HitID]; ok && src.org == rec.Org && src.session != "" {
			return e.loadSession(ctx, c, src.session, batch)
		}
	}
	for _, s := range batch { // a session this batch made or touched
		if s.key == key && rec.At.Sub(s.Last) <= e.cfg.SessionIdle {
			return s, nil
		}
	}
	idleSince := rec.At.Add(-e.cfg.SessionIdle)
	if vs, ok := e.visits.session(key); ok && vs.id != "" && vs.lastSeen.After(idleSince) {
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
	s := &sess{key: key, Session: record.Session{
		ID: ids.New(ids.Session), Org: rec.Org, Site: rec.Site, IP: rec.IP.String(), First: rec.At,
		Session: detect.Session{UA: rec.UA, Last: rec.At, State: schematype.SessionState{Signals: map[string]int{}}},
	}}
	s.State.ProbePaths, s.State.ProbeAt = e.visits.takeProbes(key)
	return s, nil
}

// openSession is the id of the visitor's latest session seen since idleSince, or "" when
// it has none: asked for every hit of a new visitor, so in SQL of our own (one prepared
// text) rather than through ent, whose query builder cost more than the lookup itself.
func (e *Engine) openSession(ctx context.Context, c *ent.Client, rec *hitRecord, idleSince time.Time) (string, error) {
	rows, err := c.QueryContext(ctx, e.openSessionSQL, rec.Org, rec.IP.String(), rec.UA, idleSince)
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
		Session: record.Session{
			Stored: true, ID: row.ID, Org: row.OrgID, Site: row.SiteID, IP: row.SourceIP, First: row.FirstSeen,
			Session: detect.Session{
				UA: row.UserAgent, Last: row.LastSeen, Hits: row.HitCount,
				Fired: slices.Clone(row.SignalsFired), Traps: slices.Clone(row.TrapsTriggered),
				Model: row.ExtractedModel, Operator: row.ExtractedOperator, State: row.State,
			},
			StoredTraps: len(row.TrapsTriggered),
			StoredVerdict: detect.Verdict{Classification: string(row.Classification), Score: row.Score,
				Confidence: row.Confidence, Severity: string(row.Severity)},
		},
		wasDetected: row.State.Detected, wasSeverity: row.State.Severity,
	}
	s.key = row.OrgID + "|" + row.SourceIP + "|" + row.UserAgent // the session's own visitor, whoever brought its token
	if s.State.Signals == nil {
		s.State.Signals = map[string]int{}
	}
	return s, nil
}

// threatType says which threat event the batch's changes to s call for: threat.detected
// when it first crossed the detection threshold, threat.escalated when its severity rose
// since it was last reported, or none. It records the report in the session's state.
func threatType(s *sess) string {
	v := s.Verdict
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
	s.State.Detected, s.State.Severity, s.Dirty = true, v.Severity, true
	return typ
}

// ThreatData is the data of threat.* events, as the API document's table gives it.
func ThreatData(s *sess) map[string]any {
	traps := s.Traps
	if traps == nil {
		traps = []string{}
	}
	return wire.Object(wire.Threat{
		Classification: strings.ToLower(s.Verdict.Classification), ExtractedModel: s.Model, ExtractedOperator: s.Operator,
		HitCount: s.Hits, Score: s.Verdict.Score, SessionID: s.ID, Severity: s.Verdict.Severity, SourceIP: s.IP,
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
	c.Session.Session = s.Session.Session.Clone()
	return &c
}

// committed marks s as stored: what the next batch adds starts from here.
func (s *sess) committed() {
	s.Committed()
	s.wasDetected, s.wasSeverity = s.State.Detected, s.State.Severity
}
