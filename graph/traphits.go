package graph

import (
	"context"

	"github.com/flytrap/flytrap/ent"
)

// HitCount is the resolver for the hitCount field.
func (r *trapResolver) HitCount(ctx context.Context, obj *ent.Trap) (int, error) {
	return r.app.TrapHitCount(ctx, obj.ID)
}

// Trap returns TrapResolver implementation.
func (r *Resolver) Trap() TrapResolver { return &trapResolver{r} }

type trapResolver struct{ *Resolver }
