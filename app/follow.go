package app

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/viewer"
)

// Follow is a reader tailing the caller's event log live: the SSE stream and the
// GraphQL subscriptions both are one.
type Follow struct {
	Types []string // event types, as EventTypes returns them (nil: all)
	After int64    // the position to continue after
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
func (a *App) OpenFollows(kind string) int64 {
	if c, ok := a.open.Load(kind); ok {
		return c.(*atomic.Int64).Load()
	}
	return 0
}

func (a *App) openCount(kind string) *atomic.Int64 {
	c, _ := a.open.LoadOrStore(kind, new(atomic.Int64))
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
func (a *App) FollowEvents(ctx context.Context, f Follow, send func(*ent.Event) error, end func(error)) error {
	if a.broker == nil {
		return ErrNoBroker
	}
	if err := CheckSiteScope(ctx, "read events"); err != nil {
		return err
	}
	v, _ := viewer.FromContext(ctx)
	open := a.openCount(f.Kind)
	open.Add(1)
	ended := end
	end = func(err error) { // called once, when the follow ends
		open.Add(-1)
		ended(err)
	}
	p := &follower{a: a, ctx: ctx, f: f, send: send, end: end, last: f.After}
	p.kicks.Store(1) // held until set up: what the broker signals meanwhile waits for the first run
	p.sub = a.broker.Subscribe(v.OrgID, f.Types, v.KeyID, p.kick)
	// A key revoked between authentication and this subscription would otherwise go unnoticed.
	if err := a.CredentialStillValid(ctx); err != nil {
		a.broker.Unsubscribe(p.sub)
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
	a    *App
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
			page, err := p.a.EventsAfter(p.ctx, p.last, 100, EventFilter{Types: p.f.Types})
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
	p.a.broker.Unsubscribe(p.sub)
	p.stopCtx()
	if p.beat != nil {
		p.beat.Stop()
	}
	p.end(err)
}

// CredentialStillValid returns event.ErrRevoked when the caller's API key has been
// revoked since it authenticated, or its JWT has expired: a live reader ends then, as
// an HTTP request would be refused.
func (a *App) CredentialStillValid(ctx context.Context) error {
	v, _ := viewer.FromContext(ctx)
	if v.Expired(a.now()) {
		return event.ErrRevoked
	}
	if v.KeyID == "" {
		return nil
	}
	k, err := a.client.APIKey.Get(privacy.DecisionContext(ctx, privacy.Allow), v.KeyID)
	if err != nil || k.RevokedAt != nil {
		return event.ErrRevoked
	}
	return nil
}

// ErrUnauthenticated is wrapped by every authentication failure.
var ErrUnauthenticated = errors.New("unauthenticated")
