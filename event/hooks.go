package event

import (
	"context"
	"fmt"
	"reflect"

	entgo "entgo.io/ent"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hook"
)

// TrapEvents, a hook on trap changes, writes trap.created, trap.updated and trap.deleted in the transaction of the change.
func TrapEvents(next entgo.Mutator) entgo.Mutator {
	return hook.TrapFunc(func(ctx context.Context, m *ent.TrapMutation) (ent.Value, error) {
		tx, err := m.Tx()
		if err != nil {
			return nil, fmt.Errorf("trap changes must run in a transaction: %w", ErrNoTx)
		}
		var before *ent.Trap
		if m.Op().Is(entgo.OpDeleteOne) || m.Op().Is(entgo.OpUpdateOne) {
			id, _ := m.ID()
			if before, err = m.Client().Trap.Get(ctx, id); err != nil {
				return nil, err
			}
		}
		v, err := next.Mutate(ctx, m)
		if err != nil {
			return nil, err
		}
		switch {
		case m.Op().Is(entgo.OpCreate):
			t := v.(*ent.Trap)
			_, err = Append(ctx, tx, t.OrgID, TrapCreated, TrapData(t))
		case m.Op().Is(entgo.OpUpdateOne):
			t := v.(*ent.Trap)
			if after := TrapData(t); !reflect.DeepEqual(after, TrapData(before)) {
				// An update that changed nothing a reader sees (the same values again) is no event.
				_, err = Append(ctx, tx, t.OrgID, TrapUpdated, after)
			}
		case m.Op().Is(entgo.OpDeleteOne):
			_, err = Append(ctx, tx, before.OrgID, TrapDeleted, TrapData(before))
		}
		if err != nil {
			return nil, err
		}
		return v, nil
	})
}
