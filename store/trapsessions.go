package store

import (
	"context"
	"fmt"
	"slices"

	entsql "entgo.io/ent/dialect/sql"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/privacy"
)

// CheckTrapSessions compares trap_sessions with what it must hold, a row per trap in every
// stored session's traps_triggered, and says how they differ (nil when they agree). It reads
// both tables whole: for the tests and flytrap-seed -verify, never a request.
func CheckTrapSessions(ctx context.Context, c *ent.Client) error {
	ctx = privacy.DecisionContext(ctx, privacy.Allow)
	type pair struct{ org, trap, session string }
	want := map[pair]bool{}
	for after := ""; ; {
		ss, err := c.Session.Query().Where(func(s *entsql.Selector) { s.Where(entsql.GT(s.C("id"), after)) }).
			Order(ent.Asc("id")).Limit(5000).All(ctx)
		if err != nil {
			return err
		}
		for _, s := range ss {
			for _, t := range s.TrapsTriggered {
				want[pair{s.OrgID, t, s.ID}] = true
			}
		}
		if len(ss) < 5000 {
			break
		}
		after = ss[len(ss)-1].ID
	}
	rows, err := c.TrapSession.Query().All(ctx)
	if err != nil {
		return err
	}
	var extra, missing []string
	got := map[pair]bool{}
	for _, r := range rows {
		p := pair{r.OrgID, r.TrapID, r.SessionID}
		if got[p] {
			return fmt.Errorf("trap_sessions holds %v twice", p)
		}
		got[p] = true
		if !want[p] {
			extra = append(extra, fmt.Sprint(p))
		}
	}
	for p := range want {
		if !got[p] {
			missing = append(missing, fmt.Sprint(p))
		}
	}
	if len(extra)+len(missing) > 0 {
		slices.Sort(extra)
		slices.Sort(missing)
		return fmt.Errorf("trap_sessions: %d rows of no session's traps_triggered %.5v, %d pairs missing %.5v", len(extra), extra, len(missing), missing)
	}
	return nil
}
