package graph

import (
	"context"
	"errors"
	"time"

	"entgo.io/contrib/entgql"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/graph/model"
)

// Subscription returns SubscriptionResolver implementation.
func (r *Resolver) Subscription() SubscriptionResolver { return &subscriptionResolver{r} }

type subscriptionResolver struct{ *Resolver }

// Events follows the caller's event log.
func (r *subscriptionResolver) Events(ctx context.Context, types []string, after *entgql.Cursor[string], since *time.Time) (<-chan *model.EventMessage, error) {
	f, err := r.follow(ctx, types, after, since)
	if err != nil {
		return stopped[*model.EventMessage](ctx, err)
	}
	return subscribe(ctx, r.Resolver, f, func(ev *ent.Event) (*model.EventMessage, error) { return eventMessage(ev), nil })
}

// ThreatDetected yields each session as it is first detected as a threat.
func (r *subscriptionResolver) ThreatDetected(ctx context.Context) (<-chan *ent.Session, error) {
	f, err := r.follow(ctx, []string{event.ThreatDetected}, nil, nil)
	if err != nil {
		return stopped[*ent.Session](ctx, err)
	}
	return subscribe(ctx, r.Resolver, f, func(ev *ent.Event) (*ent.Session, error) {
		id, _ := ev.Data["session_id"].(string)
		return r.ent(ctx).Session.Get(ctx, id)
	})
}

func (r *Resolver) follow(ctx context.Context, filter []string, after *entgql.Cursor[string], since *time.Time) (app.Follow, error) {
	types, err := app.EventTypes("types", filter)
	if err != nil {
		return app.Follow{}, err
	}
	// Revocations made outside a server (the command line on SQLite) are caught here.
	heartbeat := r.CredentialCheck
	if heartbeat <= 0 {
		heartbeat = 15 * time.Second
	}
	f := app.Follow{Kind: app.FollowSubscription, Types: types, Heartbeat: heartbeat, Beat: func() error { return r.app.CredentialStillValid(ctx) }}
	switch {
	case after != nil:
		if f.After, err = app.EventPosition(after); err == nil {
			err = r.app.CheckEventCursor(ctx, "after", f.After, app.RestartGraph)
		}
	case since != nil:
		f.After, err = r.app.EventPositionAt(ctx, *since)
	default:
		f.After, err = r.app.EventHead(ctx)
	}
	return f, err
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

// Deliverer is a transport that keeps no goroutine per subscription (the server's
// WebSocket transport puts one in the operation's context). A subscription resolver
// that supports it calls Drive while resolving, then Deliver after each result it puts
// on its channel and once after closing it: each Deliver takes exactly that one from
// the channel and sends it to the client.
type Deliverer interface {
	Drive()
	Deliver() error
}

type delivererKey struct{}

// WithDeliverer returns ctx carrying d for the subscription resolvers.
func WithDeliverer(ctx context.Context, d Deliverer) context.Context {
	return context.WithValue(ctx, delivererKey{}, d)
}

// subscribe follows the log for a subscription resolver, converting each event. With a
// Deliverer it runs only while there is something to send; without one, the follower
// waits on the channel's reader.
func subscribe[T any](ctx context.Context, r *Resolver, f app.Follow, convert func(*ent.Event) (T, error)) (<-chan T, error) {
	d, push := ctx.Value(delivererKey{}).(Deliverer)
	release, err := r.app.OpenStream(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan T, 1)
	send := func(ev *ent.Event) error {
		msg, err := convert(ev)
		if err != nil {
			return err
		}
		if push {
			out <- msg // never waits: Deliver took the one before
			return d.Deliver()
		}
		select {
		case out <- msg:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	end := func(err error) {
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, event.ErrLagged) &&
			!errors.Is(err, event.ErrRevoked) && !errors.Is(err, event.ErrClosed) && !errors.Is(err, ErrGone) {
			r.log(ctx, "subscription ended", err)
		}
		release()
		close(out)
		if push {
			_ = d.Deliver()
		}
	}
	if err := r.app.FollowEvents(ctx, f, send, end); err != nil {
		release()
		return stopped[T](ctx, err)
	}
	if push {
		d.Drive()
	}
	return out, nil
}

// stopped is a subscription that failed to start with err: the error, unless the operation
// was stopped meanwhile (the client completed it or left), when the database's answer to
// the cancellation is no error of the client's and would arrive after its complete: then
// the subscription ends without a message (a closed channel).
func stopped[T any](ctx context.Context, err error) (<-chan T, error) {
	if ctx.Err() == nil {
		return nil, err
	}
	out := make(chan T)
	close(out)
	return out, nil
}

// ErrGone is what a Deliverer returns once its client is gone or the operation stopped.
var ErrGone = errors.New("the subscriber is gone")
