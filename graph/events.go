package graph

import (
	"context"

	"entgo.io/contrib/entgql"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/ent"
)

// checkEventsAfter refuses a page of the events connection that would skip events
// retention deleted: one read after a cursor, in position order, that does not start
// right after it.
func (r *Resolver) checkEventsAfter(ctx context.Context, conn *ent.EventConnection, after *entgql.Cursor[string], order *ent.EventOrder) error {
	if after == nil || order.Field == nil || order.Field.String() != "POSITION" || order.Direction != entgql.OrderDirectionAsc {
		return nil
	}
	pos, ok := after.Value.(int64)
	if !ok {
		return nil
	}
	if len(conn.Edges) > 0 && conn.Edges[0].Node.Position == pos+1 {
		return nil
	}
	return r.app.CheckEventCursor(ctx, "after", pos, app.RestartGraph)
}
