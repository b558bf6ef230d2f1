package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"entgo.io/contrib/entgql"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/graph/model"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/internal/clip"
	"github.com/flytrap/flytrap/viewer"
)

// Follow is a reader tailing the caller's event log live: the SSE stream and the
// GraphQL subscriptions both are one.
type Follow struct {
	Types []string
	After int64 // the position to continue after
	// Heartbeat, when set, calls Beat at that interval; an error from Beat ends the follow.
	Heartbeat time.Duration
	Beat      func() error
	// Kind names the reader for the open-follows gauge: FollowStream or FollowSubscription.
	Kind string
}

// Kinds of Follow.
const (
	FollowStream       = "sse"     // GET /api/v1/events/stream
	FollowSubscription = "graphql" // a GraphQL subscription
)

// OpenFollows counts the live readers of kind on this instance, for metrics.
func (r *Resolver) OpenFollows(kind string) int64 {
	if c, ok := r.open.Load(kind); ok {
		return c.(*atomic.Int64).Load()
	}
	return 0
}

func (r *Resolver) openCount(kind string) *atomic.Int64 {
	c, _ := r.open.LoadOrStore(kind, new(atomic.Int64))
	return c.(*atomic.Int64)
}

// ErrNoBroker is returned when live delivery is not configured.
var ErrNoBroker = errors.New("live delivery is not configured")

// FollowEvents sends the caller's events after f.After, then every new one as it
// commits, until ctx ends, send fails, or the subscription is ended (the caller's key
// revoked, the reader fallen behind, the service stopping); then it calls end, once,
// with why (nil when ctx ended). It subscribes before it reads the backlog, so an
// event committed meanwhile is in one or the other, and skips by position what it
// already sent: no gap, no repeat.
//
// A follower holds no goroutine while nothing happens, so that thousands of idle
// streams cost only their memory: a new event, the heartbeat or the end of ctx starts
// one that sends what is queued and returns. send and end run on it, one call at a
// time. An error means the follow never started (end is not called).
func (r *Resolver) FollowEvents(ctx context.Context, f Follow, send func(*ent.Event) error, end func(error)) error {
	if r.broker == nil {
		return ErrNoBroker
	}
	v, _ := viewer.FromContext(ctx)
	open := r.openCount(f.Kind)
	open.Add(1)
	ended := end
	end = func(err error) { // called once, when the follow ends
		open.Add(-1)
		ended(err)
	}
	p := &follower{r: r, ctx: ctx, f: f, send: send, end: end, last: f.After}
	p.kicks.Store(1) // held until set up: what the broker signals meanwhile waits for the first run
	p.sub = r.broker.Subscribe(v.OrgID, f.Types, v.KeyID, p.kick)
	// A key revoked between authentication and this subscription would otherwise go unnoticed.
	if err := r.CredentialStillValid(ctx); err != nil {
		r.broker.Unsubscribe(p.sub)
		open.Add(-1)
		return fmt.Errorf("%w: the API key has been revoked or the token has expired", ErrUnauthenticated) // not INTERNAL
	}
	p.stopCtx = context.AfterFunc(ctx, p.kick)
	if f.Heartbeat > 0 && f.Beat != nil {
		p.beat = time.AfterFunc(f.Heartbeat, func() {
			p.beatDue.Store(true)
			p.kick()
		})
	}
	go p.run() // the backlog first
	return nil
}

// follower is one FollowEvents.
type follower struct {
	r    *Resolver
	ctx  context.Context
	f    Follow
	send func(*ent.Event) error
	end  func(error)
	sub  *event.Subscription

	// kicks counts the reasons to run since the running goroutine last looked; a
	// goroutine runs while it is above zero. Everything below is its alone.
	kicks   atomic.Int64
	beatDue atomic.Bool
	stopCtx func() bool
	beat    *time.Timer
	last    int64 // the position of the last event sent
	caught  bool  // the backlog is sent
	ended   bool
}

// kick makes the follower run, starting a goroutine unless one runs already.
func (p *follower) kick() {
	if p.kicks.Add(1) == 1 {
		go p.run()
	}
}

func (p *follower) run() {
	for {
		n := p.kicks.Load()
		if !p.ended {
			if done, err := p.step(); done || err != nil {
				p.finish(err)
			}
		}
		if p.kicks.Add(-n) == 0 {
			return
		}
	}
}

// step sends what there is to send; done says the follow is over.
func (p *follower) step() (done bool, err error) {
	if p.ctx.Err() != nil {
		return true, nil
	}
	if !p.caught {
		for {
			page, err := p.r.EventsAfter(p.ctx, p.last, 100, p.f.Types)
			if err != nil {
				return true, err
			}
			for _, ev := range page.Events {
				if err := p.deliver(ev); err != nil {
					return true, err
				}
			}
			if !page.HasMore {
				break
			}
		}
		p.caught = true
	}
	var ended bool
	select {
	case <-p.sub.Done: // what was queued before the end still goes out, so a resume starts after it
		ended = true
	default:
	}
	for _, ev := range p.sub.Take() {
		if err := p.deliver(ev); err != nil {
			return true, err
		}
	}
	if ended {
		return true, p.sub.Err()
	}
	if p.beatDue.CompareAndSwap(true, false) {
		if err := p.f.Beat(); err != nil {
			return true, err
		}
		p.beat.Reset(p.f.Heartbeat)
	}
	return false, nil
}

func (p *follower) deliver(ev *ent.Event) error {
	if ev.Position <= p.last {
		return nil
	}
	if err := p.send(ev); err != nil {
		return err
	}
	p.last = ev.Position
	return nil
}

func (p *follower) finish(err error) {
	p.ended = true
	p.r.broker.Unsubscribe(p.sub)
	p.stopCtx()
	if p.beat != nil {
		p.beat.Stop()
	}
	p.end(err)
}

// CheckEventTypes refuses event types the service does not write.
func CheckEventTypes(field string, types []string) error {
	for _, t := range types {
		if !slices.Contains(event.Types, t) {
			return apperr.Invalid(field, "%q is not an event type (known: %s)", clip.Mark(t, 64), strings.Join(event.Types, ", "))
		}
	}
	return nil
}

// positionOf reads the position out of an events cursor (of this subscription, or of
// the events connection ordered by POSITION).
func positionOf(c *entgql.Cursor[string]) (int64, error) {
	if CheckCursor("after", c, ids.Event, "POSITION") != nil {
		return 0, apperr.Invalid("after", "is not a cursor of the event log (order the events connection by POSITION)")
	}
	return c.Value.(int64), nil
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
func subscribe[T any](ctx context.Context, r *Resolver, f Follow, convert func(*ent.Event) (T, error)) (<-chan T, error) {
	d, push := ctx.Value(delivererKey{}).(Deliverer)
	release, err := r.OpenStream(ctx)
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
	if err := r.FollowEvents(ctx, f, send, end); err != nil {
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

// CredentialStillValid returns event.ErrRevoked when the caller's API key has been
// revoked since it authenticated, or its JWT has expired: a live reader ends then, as
// an HTTP request would be refused.
func (r *Resolver) CredentialStillValid(ctx context.Context) error {
	v, _ := viewer.FromContext(ctx)
	if v.Expired(r.now()) {
		return event.ErrRevoked
	}
	if v.KeyID == "" {
		return nil
	}
	k, err := r.client.APIKey.Get(privacy.DecisionContext(ctx, privacy.Allow), v.KeyID)
	if err != nil || k.RevokedAt != nil {
		return event.ErrRevoked
	}
	return nil
}
