package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"entgo.io/contrib/entgql"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/graph/model"
	"github.com/flytrap/flytrap/viewer"
)

// Follow is a reader tailing the caller's event log live: the SSE stream and the
// GraphQL subscriptions both are one.
type Follow struct {
	Types []string
	After int64 // the position to continue after
	// Heartbeat, when set, calls Beat at that interval while idle; an error from Beat ends the follow.
	Heartbeat time.Duration
	Beat      func() error
	// Stop ends the follow when closed (the service shutting down).
	Stop <-chan struct{}
}

// ErrNoBroker is returned when live delivery is not configured.
var ErrNoBroker = errors.New("live delivery is not configured")

// FollowEvents sends the caller's events after f.After, then every new one as it
// commits, until ctx ends, send fails, or the subscription is ended (the caller's key
// revoked, the reader fallen behind, the service stopping). It subscribes before it
// reads the backlog, so an event committed meanwhile is in one or the other, and
// skips by position what it already sent: no gap, no repeat.
func (r *Resolver) FollowEvents(ctx context.Context, f Follow, send func(*ent.Event) error) error {
	if r.broker == nil {
		return ErrNoBroker
	}
	v, _ := viewer.FromContext(ctx)
	sub := r.broker.Subscribe(v.OrgID, f.Types, v.KeyID)
	defer r.broker.Unsubscribe(sub)
	// A key revoked between authentication and this subscription would otherwise go unnoticed.
	if err := r.KeyStillValid(ctx); err != nil {
		return err
	}
	last := f.After
	deliver := func(ev *ent.Event) error {
		if ev.Position <= last {
			return nil
		}
		if err := send(ev); err != nil {
			return err
		}
		last = ev.Position
		return nil
	}
	for {
		page, err := r.EventsAfter(ctx, last, 100, f.Types)
		if err != nil {
			return err
		}
		for _, ev := range page.Events {
			if err := deliver(ev); err != nil {
				return err
			}
		}
		if !page.HasMore {
			break
		}
	}
	var beat <-chan time.Time
	if f.Heartbeat > 0 && f.Beat != nil {
		t := time.NewTicker(f.Heartbeat)
		defer t.Stop()
		beat = t.C
	}
	for {
		select {
		case ev := <-sub.C:
			if err := deliver(ev); err != nil {
				return err
			}
		case <-sub.Done:
			for { // what was queued before the end still goes out, so a resume starts after it
				select {
				case ev := <-sub.C:
					if err := deliver(ev); err != nil {
						return err
					}
					continue
				default:
				}
				return sub.Err()
			}
		case <-beat:
			if err := f.Beat(); err != nil {
				return err
			}
		case <-f.Stop:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// CheckEventTypes refuses event types the service does not write.
func CheckEventTypes(field string, types []string) error {
	for _, t := range types {
		if !slices.Contains(event.Types, t) {
			return apperr.Invalid(field, "%q is not an event type (known: %s)", t, strings.Join(event.Types, ", "))
		}
	}
	return nil
}

// positionOf reads the position out of an events cursor (of this subscription, or of
// the events connection ordered by POSITION).
func positionOf(c *entgql.Cursor[string]) (int64, error) {
	switch v := c.Value.(type) {
	case int64:
		return v, nil
	case uint64:
		return int64(v), nil
	case int8, int16, int32, uint8, uint16, uint32, int, float64:
		var n int64
		_, err := fmt.Sscan(fmt.Sprint(v), &n)
		return n, err
	}
	return 0, apperr.Invalid("after", "is not a cursor of the event log (order the events connection by POSITION)")
}

// eventMessage is an event as the events subscription yields it.
func eventMessage(ev *ent.Event) *model.EventMessage {
	data := ev.Data
	if data == nil {
		data = map[string]any{}
	}
	return &model.EventMessage{
		ID: ev.ID, Type: ev.Type, APIVersion: ev.APIVersion, CreatedAt: ev.CreatedAt, Data: data,
		Cursor: entgql.Cursor[string]{ID: ev.ID, Value: ev.Position},
	}
}

// subscribe runs FollowEvents in its own goroutine, feeding out until the follow ends.
func subscribe[T any](ctx context.Context, r *Resolver, f Follow, convert func(*ent.Event) (T, error)) <-chan T {
	out := make(chan T, 16)
	go func() {
		defer close(out)
		err := r.FollowEvents(ctx, f, func(ev *ent.Event) error {
			msg, err := convert(ev)
			if err != nil {
				return err
			}
			select {
			case out <- msg:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, event.ErrLagged) &&
			!errors.Is(err, event.ErrRevoked) && !errors.Is(err, event.ErrClosed) {
			r.log(ctx, "subscription ended", err)
		}
	}()
	return out
}

// KeyStillValid returns event.ErrRevoked when the caller's API key has been revoked since it authenticated.
func (r *Resolver) KeyStillValid(ctx context.Context) error {
	v, _ := viewer.FromContext(ctx)
	if v.KeyID == "" {
		return nil
	}
	k, err := r.client.APIKey.Get(privacy.DecisionContext(ctx, privacy.Allow), v.KeyID)
	if err != nil || k.RevokedAt != nil {
		return event.ErrRevoked
	}
	return nil
}
