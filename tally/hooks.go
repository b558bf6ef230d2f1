package tally

import (
	"context"
	"fmt"

	entgo "entgo.io/ent"
	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hook"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/session"
)

// SessionHook keeps the session counters right through every ent mutation of sessions: a
// created session counts in its severity and classification, an update that changes them
// moves it from the old counter to the new, tripwires and prompts follow their columns, and
// a deleted session leaves every counter it was in. The stored rows an update or a delete
// touches are read first, in the transaction (on PostgreSQL locked FOR UPDATE, so a
// concurrent instance's change to the same session is seen, not overwritten).
func SessionHook(next entgo.Mutator) entgo.Mutator {
	return hook.SessionFunc(func(ctx context.Context, m *ent.SessionMutation) (entgo.Value, error) {
		if m.Op().Is(entgo.OpCreate) {
			v, err := next.Mutate(ctx, m)
			if err != nil {
				return v, err
			}
			org, _ := m.OrgID()
			sev, _ := m.Severity()
			cls, _ := m.Classification()
			trips, _ := m.TripwiresFired()
			proms, _ := m.PromptsCaptured()
			var d Delta
			d.Add(org, SessionsName(string(sev), string(cls)), 1)
			d.Add(org, Tripwires, int64(trips))
			d.Add(org, Prompts, int64(proms))
			if err := trapSessionsOf(ctx, m, &d); err != nil {
				return v, err
			}
			return v, record(ctx, m.Client(), m, &d)
		}
		del := m.Op().Is(entgo.OpDelete | entgo.OpDeleteOne)
		var traps Delta // the trap_sessions rows of the traps an update sets
		if !del {
			if err := trapSessionsOf(ctx, m, &traps); err != nil {
				return nil, err
			}
		}
		if !del && !countedFieldsChange(m) {
			v, err := next.Mutate(ctx, m)
			if err != nil {
				return v, err
			}
			return v, record(ctx, m.Client(), m, &traps)
		}
		old, err := storedSessions(ctx, m)
		if err != nil {
			return nil, err
		}
		v, err := next.Mutate(ctx, m)
		if err != nil {
			return v, err
		}
		var d Delta
		for _, o := range old {
			d.Add(o.Org, SessionsName(o.Severity, o.Class), -1)
			d.Add(o.Org, Tripwires, -o.Tripwires)
			d.Add(o.Org, Prompts, -o.Prompts)
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
			d.Add(n.Org, SessionsName(n.Severity, n.Class), 1)
			d.Add(n.Org, Tripwires, n.Tripwires)
			d.Add(n.Org, Prompts, n.Prompts)
		}
		d.merge(&traps)
		return v, record(ctx, m.Client(), m, &d)
	})
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
		return nil, fmt.Errorf("read sessions to count: %w", err)
	}
	return rows, nil
}

// HitHook counts a hit created through ent in its hour (the writer inserts its hits
// without ent, and counts them itself with Pending(tx).Hit). Deleting hits changes no
// counter: a purged hit still counts in the hour it fell in.
func HitHook(next entgo.Mutator) entgo.Mutator {
	return hook.HitFunc(func(ctx context.Context, m *ent.HitMutation) (entgo.Value, error) {
		v, err := next.Mutate(ctx, m)
		if err != nil || !m.Op().Is(entgo.OpCreate) {
			return v, err
		}
		org, _ := m.OrgID()
		trap, _ := m.TrapID()
		at, ok := m.ReceivedAt()
		if !ok {
			return v, nil
		}
		var d Delta
		d.Hit(org, trap, at.Unix()/3600)
		return v, record(ctx, m.Client(), m, &d)
	})
}
