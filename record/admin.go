package record

import (
	"context"

	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/predicate"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/tally"
)

// Writes outside the listener — the seed tool, an operator's change, tests' fixtures — go
// through ent's builders, handed to these functions, which run them and count what they
// change in the transaction the builders belong to (tally.Note: written at its commit, or
// at once when the builders run outside a transaction). Writing hits, sessions or prompts
// through ent directly changes no counter.

// CreateSessions creates sessions and counts each in its severity and classification, its
// tripwires and prompts, and its traps (trap_sessions).
func CreateSessions(ctx context.Context, c *ent.Client, b ...*ent.SessionCreate) ([]*ent.Session, error) {
	if len(b) == 0 {
		return nil, nil
	}
	out, err := c.Session.CreateBulk(b...).Save(ctx)
	if err != nil {
		return nil, err
	}
	var d tally.Delta
	for _, s := range out {
		d.Add(s.OrgID, tally.SessionsName(string(s.Severity), string(s.Classification)), 1)
		d.Add(s.OrgID, tally.Tripwires, int64(s.TripwiresFired))
		d.Add(s.OrgID, tally.Prompts, int64(s.PromptsCaptured))
		for _, t := range s.TrapsTriggered {
			d.TrapSession(t, s.ID)
		}
	}
	return out, tally.Note(ctx, c, b[0].Mutation(), &d)
}

// UpdateSessions runs u, moving each session it changes from the counters it was in to
// those it is in after: the rows are read first, in the transaction (on PostgreSQL locked
// FOR UPDATE, so a concurrent instance's change is seen, not overwritten).
func UpdateSessions(ctx context.Context, u *ent.SessionUpdate) (int, error) {
	var n int
	err := countChange(ctx, u.Mutation(), false, func() (err error) {
		n, err = u.Save(ctx)
		return err
	})
	return n, err
}

// UpdateSession is UpdateSessions of one session.
func UpdateSession(ctx context.Context, u *ent.SessionUpdateOne) error {
	return countChange(ctx, u.Mutation(), false, func() error { return u.Exec(ctx) })
}

// DeleteSessions deletes the sessions that match where (after their hits, signals and
// prompts: the foreign keys refuse otherwise) and takes each out of every counter it was
// in; the hourly hit buckets keep their hits.
func DeleteSessions(ctx context.Context, c *ent.Client, where ...predicate.Session) (int, error) {
	m := c.Session.Update().Where(where...).Mutation() // what the counters read: the rows where names
	var n int
	err := countChange(ctx, m, true, func() (err error) {
		n, err = c.Session.Delete().Where(where...).Exec(ctx)
		return err
	})
	return n, err
}

// countChange runs exec, the update (or, del, the deletion) m describes, and counts it.
func countChange(ctx context.Context, m *ent.SessionMutation, del bool, exec func() error) error {
	var traps tally.Delta // the trap_sessions rows of the traps an update sets
	if !del {
		if err := trapSessionsOf(ctx, m, &traps); err != nil {
			return err
		}
	}
	if !del && !countedFieldsChange(m) {
		if err := exec(); err != nil {
			return err
		}
		return tally.Note(ctx, m.Client(), m, &traps)
	}
	old, err := storedSessions(ctx, m)
	if err != nil {
		return err
	}
	if err := exec(); err != nil {
		return err
	}
	var d tally.Delta
	for _, o := range old {
		d.Add(o.Org, tally.SessionsName(o.Severity, o.Class), -1)
		d.Add(o.Org, tally.Tripwires, -o.Tripwires)
		d.Add(o.Org, tally.Prompts, -o.Prompts)
		if del {
			continue
		}
		n := o
		if v, ok := m.Severity(); ok {
			n.Severity = string(v)
		}
		if v, ok := m.Classification(); ok {
			n.Class = string(v)
		}
		if v, ok := m.TripwiresFired(); ok {
			n.Tripwires = int64(v)
		}
		if v, ok := m.AddedTripwiresFired(); ok {
			n.Tripwires += int64(v)
		}
		if v, ok := m.PromptsCaptured(); ok {
			n.Prompts = int64(v)
		}
		if v, ok := m.AddedPromptsCaptured(); ok {
			n.Prompts += int64(v)
		}
		d.Add(n.Org, tally.SessionsName(n.Severity, n.Class), 1)
		d.Add(n.Org, tally.Tripwires, n.Tripwires)
		d.Add(n.Org, tally.Prompts, n.Prompts)
	}
	d.Merge(&traps)
	return tally.Note(ctx, m.Client(), m, &d)
}

// trapSessionsOf notes the traps a session update sets in traps_triggered: every trap of
// the list (the rows already there stay as they are), for the sessions it changes.
func trapSessionsOf(ctx context.Context, m *ent.SessionMutation, d *tally.Delta) error {
	traps, ok := m.TrapsTriggered()
	if !ok || len(traps) == 0 {
		return nil
	}
	var list []string
	if id, ok := m.ID(); ok {
		list = []string{id}
	} else {
		var err error
		if list, err = m.StoredQuery().IDs(privacy.DecisionContext(ctx, privacy.Allow)); err != nil {
			return errf("sessions whose traps change", err)
		}
	}
	for _, id := range list {
		for _, t := range traps {
			d.TrapSession(t, id)
		}
	}
	return nil
}

// countedFieldsChange says whether an update changes a column a counter follows.
func countedFieldsChange(m *ent.SessionMutation) bool {
	for _, f := range []string{session.FieldSeverity, session.FieldClassification, session.FieldTripwiresFired, session.FieldPromptsCaptured} {
		if _, ok := m.Field(f); ok {
			return true
		}
		if _, ok := m.AddedField(f); ok {
			return true
		}
	}
	return false
}

type storedSession struct {
	Org       string `json:"org_id"`
	Severity  string `json:"severity"`
	Class     string `json:"classification"`
	Tripwires int64  `json:"tripwires_fired"`
	Prompts   int64  `json:"prompts_captured"`
}

// storedSessions reads what the counters know of the sessions m changes, as stored.
func storedSessions(ctx context.Context, m *ent.SessionMutation) ([]storedSession, error) {
	var rows []storedSession
	err := m.StoredQuery().Modify(func(s *sql.Selector) {
		s.Select(s.C(session.FieldOrgID), s.C(session.FieldSeverity), s.C(session.FieldClassification),
			s.C(session.FieldTripwiresFired), s.C(session.FieldPromptsCaptured))
		if s.Dialect() == dialect.Postgres {
			s.ForUpdate()
		}
	}).Scan(privacy.DecisionContext(ctx, privacy.Allow), &rows)
	if err != nil {
		return nil, errf("read sessions to count", err)
	}
	return rows, nil
}

// CreateHits creates hits and counts each in its hour (the organization's and its trap's)
// and, with a JA4, in its JA4 campaign.
func CreateHits(ctx context.Context, c *ent.Client, b ...*ent.HitCreate) ([]*ent.Hit, error) {
	if len(b) == 0 {
		return nil, nil
	}
	out, err := c.Hit.CreateBulk(b...).Save(ctx)
	if err != nil {
		return nil, err
	}
	var d tally.Delta
	for _, h := range out {
		d.Hit(h.OrgID, h.TrapID, h.ReceivedAt.Unix()/3600)
		if h.Ja4 != nil && *h.Ja4 != "" {
			d.Ja4Hit(h.OrgID, *h.Ja4, h.SessionID, "", h.ID, h.ReceivedAt, true)
		}
	}
	return out, tally.Note(ctx, c, b[0].Mutation(), &d)
}

// CreatePrompts creates captured prompts and records each in its campaign.
func CreatePrompts(ctx context.Context, c *ent.Client, b ...*ent.PromptCreate) ([]*ent.Prompt, error) {
	if len(b) == 0 {
		return nil, nil
	}
	out, err := c.Prompt.CreateBulk(b...).Save(ctx)
	if err != nil {
		return nil, err
	}
	var d tally.Delta
	for _, p := range out {
		d.Prompt(p.OrgID, p.Hash, p.Operator, p.Model, p.SessionID, p.ID, p.CreatedAt)
	}
	return out, tally.Note(ctx, c, b[0].Mutation(), &d)
}
