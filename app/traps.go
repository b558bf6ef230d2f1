package app

import (
	"context"
	"fmt"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/trap"
	"github.com/flytrap/flytrap/ids"
)

// maxTrapList bounds ListTraps.
const maxTrapList = 10000

// TrapFilter narrows ListTraps; a zero field does not filter.
type TrapFilter struct {
	SiteID string
	Path   string
	Type   trap.Type
	Active *bool
}

// ListTraps is the caller's traps that match f, oldest first, at most 10,000.
func (a *App) ListTraps(ctx context.Context, f TrapFilter) ([]*ent.Trap, error) {
	q := a.ent(ctx).Trap.Query()
	if f.SiteID != "" {
		q.Where(trap.SiteID(f.SiteID))
	}
	if f.Path != "" {
		q.Where(trap.Path(f.Path))
	}
	if f.Type != "" {
		q.Where(trap.TypeEQ(f.Type))
	}
	if f.Active != nil {
		q.Where(trap.Active(*f.Active))
	}
	ts, err := q.Order(ent.Asc(trap.FieldCreatedAt), ent.Asc(trap.FieldID)).Limit(maxTrapList).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("list traps: %w", err)
	}
	return ts, nil
}

// TrapInput is a new trap. Its fields are ent's CreateTrapInput's (a conversion keeps them in
// step: a field added to the schema fails to compile here until it is added).
type TrapInput struct {
	Name        string
	Path        *string
	Type        trap.Type
	Description *string
	PublicTitle *string // what visitors read ("" or nil: generated); Name and Description never leave the dashboard
	Active      *bool
	SiteID      *string
}

// TrapChanges are the fields of a trap to change (nil: unchanged), ent's UpdateTrapInput's.
type TrapChanges struct {
	Name        *string
	Description *string
	PublicTitle *string
	Active      *bool
}

// CreateTrap makes a trap; without a path, at a plausible place for its kind.
func (a *App) CreateTrap(ctx context.Context, in TrapInput) (*ent.Trap, error) {
	if k, ok := decoy.KindOf(string(in.Type)); ok && (in.Path == nil || *in.Path == "") {
		p := decoy.Path(k.Name)
		in.Path = &p
	}
	return a.ent(ctx).Trap.Create().SetInput(ent.CreateTrapInput(in)).Save(ctx)
}

// UpdateTrap changes a trap.
func (a *App) UpdateTrap(ctx context.Context, id string, in TrapChanges) (*ent.Trap, error) {
	if err := CheckID(id, ids.Trap); err != nil {
		return nil, err
	}
	return a.ent(ctx).Trap.UpdateOneID(id).SetInput(ent.UpdateTrapInput(in)).Save(ctx)
}

// DeleteTrap deletes a trap; the sessions and hits it recorded are kept.
func (a *App) DeleteTrap(ctx context.Context, id string) error {
	if err := CheckID(id, ids.Trap); err != nil {
		return err
	}
	return a.ent(ctx).Trap.DeleteOneID(id).Exec(ctx)
}
