package app

import (
	"context"
	"fmt"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hithour"
)

// TrapHitCount is the hits a trap (of the caller's organization) has received, from the
// hourly counters: one index range, whatever the number of hits.
func (a *App) TrapHitCount(ctx context.Context, trapID string) (int, error) {
	var rows []struct {
		TrapID string `json:"trap_id"`
		Sum    int    `json:"sum"`
	}
	err := a.ent(ctx).HitHour.Query().Where(hithour.TrapID(trapID)).
		GroupBy(hithour.FieldTrapID).Aggregate(ent.Sum(hithour.FieldHits)).Scan(ctx, &rows)
	if err != nil {
		return 0, fmt.Errorf("trap hit count: %w", err)
	}
	if len(rows) == 0 {
		return 0, nil
	}
	return rows[0].Sum, nil
}
