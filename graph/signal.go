package graph

import (
	"context"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/ent"
)

// PlacementLabel is the resolver for the placementLabel field: the placement in words as the
// firing alone tells it (a lure's where from the lures' layout; a decoy's purpose only).
func (r *signalResolver) PlacementLabel(ctx context.Context, obj *ent.Signal) (string, error) {
	return decoy.PlacementLabel(obj.Placement, ""), nil
}

// Lure is the resolver for the lure field.
func (r *signalResolver) Lure(ctx context.Context, obj *ent.Signal) (bool, error) {
	return decoy.IsLurePlacement(obj.Placement), nil
}

// Signal returns SignalResolver implementation.
func (r *Resolver) Signal() SignalResolver { return &signalResolver{r} }

type signalResolver struct{ *Resolver }
