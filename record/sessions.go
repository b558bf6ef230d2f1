package record

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/store/sqltext"
	"github.com/flytrap/flytrap/tally"
)

// Session is a session as the writer stores it: what the engine knows of it
// (detect.Session), its row's own fields, and what changed since it was stored.
type Session struct {
	detect.Session
	ID, Org, Site, IP string
	First             time.Time
	// Stored says the session's row exists (else Record creates it).
	Stored bool
	// AddHits, AddTrips and AddProms are the hits, tripwire firings and prompts since it
	// was stored: added to its columns and counters.
	AddHits, AddTrips, AddProms int
	// StoredTraps is how many of Traps (which only grows) are stored: traps_triggered is
	// written, and its trap_sessions rows added, only when it grew.
	StoredTraps int
	// Verdict is the session judged now; StoredVerdict as stored.
	Verdict, StoredVerdict detect.Verdict
	// Dirty says the lists or the state changed since the session was stored. An
	// unchanged session costs only its counters.
	Dirty bool
	// ja4s are JA4s of which the session's JA4 campaign membership is stored, with its first
	// hit (at most maxKnownJA4s remembered); newJA4s those noted in the batch being recorded.
	ja4s, newJA4s []knownJA4
}

// knownJA4 is a JA4 of a session and the first of its hits with it.
type knownJA4 struct{ ja4, first string }

// maxKnownJA4s bounds the JA4s remembered of a session: a session rotating through more has
// its memberships written again (the database keeps one of each).
const maxKnownJA4s = 8

// noteJA4 says whether the session's hit id with the JA4 ja4 must write the session's
// membership of its JA4 campaign: not when it is stored with a first hit no later than id.
func (s *Session) noteJA4(ja4, id string) bool {
	for _, k := range s.ja4s {
		if k.ja4 == ja4 && k.first <= id {
			return false
		}
	}
	for i, k := range s.newJA4s {
		if k.ja4 == ja4 {
			s.newJA4s[i].first = min(k.first, id)
			return true
		}
	}
	if len(s.ja4s)+len(s.newJA4s) < maxKnownJA4s {
		s.newJA4s = append(s.newJA4s, knownJA4{ja4, id})
	}
	return true
}

// committedJA4s adds the JA4s noted in the batch to those known stored.
func (s *Session) committedJA4s() {
	known := slices.Clone(s.ja4s)
	for _, n := range s.newJA4s {
		if i := slices.IndexFunc(known, func(k knownJA4) bool { return k.ja4 == n.ja4 }); i >= 0 {
			known[i].first = min(known[i].first, n.first)
		} else {
			known = append(known, n)
		}
	}
	s.ja4s, s.newJA4s = known, nil
}

// onlyTouched says the stored session's only change is a later last_seen and more hits.
func (s *Session) onlyTouched() bool {
	return !s.Dirty && s.Verdict == s.StoredVerdict && s.AddTrips == 0 && s.AddProms == 0
}

// createSessions inserts new sessions, a multi-row INSERT per chunk (ent's CreateBulk),
// and counts each in its severity and classification, tripwires, prompts and traps. A
// public honeypot's visitors are mostly new (~2 hits a session), and one INSERT per
// session cost the writer a statement each; chunks of powers of two keep the statement
// texts few, so the writer's prepared statements cover them (store.Prepared).
func createSessions(ctx context.Context, c *ent.Client, d *tally.Delta, ss []*Session) error {
	for _, n := range stmtChunks(len(ss), createChunk) {
		b := make([]*ent.SessionCreate, n)
		for i, s := range ss[:n] {
			b[i] = sessionCreate(c, s)
		}
		if err := c.Session.CreateBulk(b...).Exec(ctx); err != nil {
			return errf("create sessions", err)
		}
		for _, s := range ss[:n] {
			d.Add(s.Org, tally.SessionsName(s.Verdict.Severity, s.Verdict.Classification), 1)
			d.Add(s.Org, tally.Tripwires, int64(s.AddTrips))
			d.Add(s.Org, tally.Prompts, int64(s.AddProms))
			for _, t := range s.Traps {
				d.TrapSession(t, s.ID)
			}
		}
		ss = ss[n:]
	}
	return nil
}

// createChunk is the most sessions one INSERT creates: some 3,000 parameters, well
// within SQLite's 32,766.
const createChunk = 128

// sessionCreate is the creation of the new session s.
func sessionCreate(c *ent.Client, s *Session) *ent.SessionCreate {
	v := s.Verdict
	return c.Session.Create().SetID(s.ID).SetOrgID(s.Org).SetSiteID(s.Site).SetSourceIP(s.IP).SetUserAgent(s.UA).
		SetFirstSeen(s.First).SetLastSeen(s.Last).SetHitCount(s.Hits).SetSignalsFired(s.Fired).
		SetTrapsTriggered(s.Traps).SetTripwiresFired(s.AddTrips).SetPromptsCaptured(s.AddProms).
		SetExtractedModel(s.Model).SetExtractedOperator(s.Operator).SetState(s.State).
		SetClassification(session.Classification(v.Classification)).SetScore(v.Score).
		SetConfidence(v.Confidence).SetSeverity(session.Severity(v.Severity))
}

// saveSession writes a stored session's changes, with atomic counters. When its verdict
// changed, its counted columns are read first, in the transaction (on PostgreSQL locked
// FOR UPDATE, so another instance's change to the same session is seen, not
// overwritten), and the session moves from the counter it is in to its new one.
func (w *Writer) saveSession(ctx context.Context, c *ent.Client, d *tally.Delta, s *Session) error {
	v := s.Verdict
	u := c.Session.Update().Where(session.ID(s.ID)).SetLastSeen(s.Last).AddHitCount(s.AddHits)
	if s.AddTrips > 0 {
		u.AddTripwiresFired(s.AddTrips)
	}
	if s.AddProms > 0 {
		u.AddPromptsCaptured(s.AddProms)
	}
	if s.Dirty {
		u.SetSignalsFired(s.Fired).SetExtractedModel(s.Model).SetExtractedOperator(s.Operator).SetState(s.State)
		if len(s.Traps) != s.StoredTraps {
			u.SetTrapsTriggered(s.Traps)
			for _, t := range s.Traps {
				d.TrapSession(t, s.ID)
			}
		}
	}
	if v != s.StoredVerdict {
		old, err := storedVerdicts(ctx, c, w.pg, []string{s.ID})
		if err != nil {
			return err
		}
		for _, o := range old {
			d.Add(o.org, tally.SessionsName(o.severity, o.class), -1)
			d.Add(o.org, tally.SessionsName(v.Severity, v.Classification), 1)
		}
		u.SetClassification(session.Classification(v.Classification)).SetScore(v.Score).
			SetConfidence(v.Confidence).SetSeverity(session.Severity(v.Severity))
	}
	if err := u.Exec(ctx); err != nil {
		return errf("update session", err)
	}
	d.Add(s.Org, tally.Tripwires, int64(s.AddTrips))
	d.Add(s.Org, tally.Prompts, int64(s.AddProms))
	return nil
}

// storedVerdict is what the session counters know of a stored session.
type storedVerdict struct {
	id, org, severity, class string
	tripwires, prompts       int64
}

// storedVerdicts reads the counted columns of the sessions ids, locking them on PostgreSQL.
func storedVerdicts(ctx context.Context, c *ent.Client, pg bool, ids []string) ([]storedVerdict, error) {
	var q strings.Builder
	q.WriteString("SELECT " + session.FieldID + ", " + session.FieldOrgID + ", " + session.FieldSeverity + ", " +
		session.FieldClassification + ", " + session.FieldTripwiresFired + ", " + session.FieldPromptsCaptured +
		" FROM " + session.Table + " WHERE " + session.FieldID + " IN ")
	sqltext.Values(&q, pg, 1, sqltext.Columns(len(ids))...)
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	if pg {
		q.WriteString(" FOR UPDATE")
	}
	rows, err := c.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, errf("read sessions to count", err)
	}
	defer rows.Close()
	var out []storedVerdict
	for rows.Next() {
		var o storedVerdict
		if err := rows.Scan(&o.id, &o.org, &o.severity, &o.class, &o.tripwires, &o.prompts); err != nil {
			return nil, errf("read sessions to count", err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, errf("read sessions to count", err)
	}
	return out, nil
}

// touchSessions moves last_seen and hit_count of many sessions with few statements: the
// common case of a visitor's further hits, which would otherwise cost a statement each.
// No counter follows these columns. Each statement joins the sessions by id to a list of
// their new values (UPDATE … FROM, SQLite 3.33 or later): a CASE per column would
// compare each row with every id, and a WITH clause costs SQLite a copy of the list to
// prepare. Lists come in chunks of powers of two (stmtChunks), so the writer's prepared
// statements cover every batch.
func (w *Writer) touchSessions(ctx context.Context, c *ent.Client, d *tally.Delta, ss []*Session) error {
	if len(ss) == 0 {
		return nil
	}
	if len(ss) == 1 {
		return w.saveSession(ctx, c, d, ss[0])
	}
	args := make([]any, 0, min(len(ss), touchChunk)*3)
	for _, n := range stmtChunks(len(ss), touchChunk) {
		args = args[:0]
		for _, s := range ss[:n] {
			args = append(args, s.ID, s.Last, s.AddHits)
		}
		if _, err := c.ExecContext(ctx, w.sessionTouch(n), args...); err != nil {
			return errf("update sessions", err)
		}
		ss = ss[n:]
	}
	return nil
}

// touchChunk is the most sessions one touch statement moves.
const touchChunk = 128

// sessionTouch is the statement that touches n sessions, made once per n.
func (w *Writer) sessionTouch(n int) string {
	if q, ok := w.sessionTouches.Load(n); ok {
		return q.(string)
	}
	var values strings.Builder
	sqltext.Values(&values, w.pg, n, "", "::timestamptz", "::bigint")
	// Both databases name the columns of a VALUES list column1, column2, …
	q := "UPDATE " + session.Table + " SET " + session.FieldLastSeen + " = v.column2, " +
		session.FieldHitCount + " = " + session.FieldHitCount + " + v.column3 FROM (VALUES " + values.String() +
		") AS v WHERE " + session.Table + "." + session.FieldID + " = v.column1"
	w.sessionTouches.Store(n, q)
	return q
}
