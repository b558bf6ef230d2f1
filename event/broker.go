package event

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/flytrap/flytrap/ent"
	entevent "github.com/flytrap/flytrap/ent/event"
	"github.com/flytrap/flytrap/ent/hook"
	"github.com/flytrap/flytrap/ent/privacy"
)

// Why a subscription ended.
var (
	ErrLagged  = errors.New("the subscriber fell behind; resume from its last position")
	ErrClosed  = errors.New("the service is shutting down")
	ErrRevoked = errors.New("the API key was revoked")
)

// Broker tails the event log and hands new events to live subscribers (SSE
// streams, GraphQL subscriptions). The rows stay the source of truth: the broker
// reads committed events in position order, so it never reorders or skips, and a
// commit only wakes it. A subscriber that falls behind is dropped, never waited
// on: it resumes from its last position.
type Broker struct {
	client *ent.Client
	log    *slog.Logger
	poll   time.Duration

	wake  chan struct{}
	ready chan struct{}

	mu     sync.Mutex
	subs   map[*Subscription]struct{}
	last   int64
	closed bool
}

// Subscription receives the events of one organization, optionally of some types only.
// The broker queues them; the subscriber takes them with Take when notified.
type Subscription struct {
	Done  <-chan struct{}
	org   string
	types []string
	key   string
	done  chan struct{}
	err   error
	// notify, when set, is called after each event queued and once at the end,
	// under the broker's lock: it must only schedule work, never do it.
	notify func()

	mu    sync.Mutex
	queue []*ent.Event // nil while idle: an idle subscriber holds no buffer
}

// Err says why the subscription ended, once Done is closed.
func (s *Subscription) Err() error { return s.err }

// Take returns the events queued since the last call, oldest first.
func (s *Subscription) Take() []*ent.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue = nil
	return q
}

// offer queues ev unless the subscriber is SubscriptionBuffer events behind.
func (s *Subscription) offer(ev *ent.Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) >= SubscriptionBuffer {
		return false
	}
	s.queue = append(s.queue, ev)
	return true
}

// SubscriptionBuffer is how many events a subscriber may lag before it is dropped (it
// then resumes from its cursor).
const SubscriptionBuffer = 64

// NewBroker returns a broker over client. It polls every poll interval as well as on
// wake-ups, so events committed by other processes on the database arrive too.
func NewBroker(client *ent.Client, log *slog.Logger, poll time.Duration) *Broker {
	return &Broker{client: client, log: log, poll: poll, wake: make(chan struct{}, 1), ready: make(chan struct{}), subs: map[*Subscription]struct{}{}}
}

// Hooks are the broker's hooks: a committed event wakes it, a committed key change ends
// the key's subscriptions if it was revoked. The server registers them (server/hooks.go).
func (b *Broker) Hooks() (onEvent, onKey ent.Hook) {
	return AfterCommit(ent.OpCreate, func(context.Context, ent.Mutation) { b.Wake() }), AfterCommit(ent.OpUpdateOne, b.keyChanged)
}

// AfterCommit is a hook calling f after the transaction of a matching mutation
// commits (or at once outside a transaction): what others learn of a change must
// never run ahead of the change itself.
func AfterCommit(op ent.Op, f func(context.Context, ent.Mutation)) ent.Hook {
	return hook.On(func(next ent.Mutator) ent.Mutator {
		return ent.MutateFunc(func(ctx context.Context, m ent.Mutation) (ent.Value, error) {
			v, err := next.Mutate(ctx, m)
			if err != nil {
				return v, err
			}
			type txer interface{ Tx() (*ent.Tx, error) }
			if t, ok := m.(txer); ok {
				if tx, err := t.Tx(); err == nil {
					tx.OnCommit(func(next ent.Committer) ent.Committer {
						return ent.CommitFunc(func(ctx context.Context, tx *ent.Tx) error {
							err := next.Commit(ctx, tx)
							if err == nil {
								f(ctx, m)
							}
							return err
						})
					})
					return v, nil
				}
			}
			f(ctx, m)
			return v, nil
		})
	}, op)
}

func (b *Broker) keyChanged(_ context.Context, m ent.Mutation) {
	km, ok := m.(*ent.APIKeyMutation)
	if !ok {
		return
	}
	if _, revoked := km.RevokedAt(); !revoked {
		return
	}
	if id, ok := km.ID(); ok {
		b.RevokeKey(id)
	}
}

// Ready is closed once Run has found the head of the log: events committed after
// that reach the subscribers.
func (b *Broker) Ready() <-chan struct{} { return b.ready }

// Wake makes the broker read the log now.
func (b *Broker) Wake() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Subscribe starts delivering org's new events of the given types (all when empty).
// key, when set, is the API key the subscriber authenticated with: revoking it ends the
// subscription. notify, when set, is called after each event is queued and when Done
// closes, so that the subscriber needs no goroutine waiting; it runs under the broker's
// lock and must not block or call back into the broker.
func (b *Broker) Subscribe(org string, types []string, key string, notify func()) *Subscription {
	done := make(chan struct{})
	s := &Subscription{Done: done, org: org, types: types, key: key, done: done, notify: notify}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		s.end(ErrClosed)
		return s
	}
	b.subs[s] = struct{}{}
	return s
}

// Unsubscribe ends s; it is safe to call more than once.
func (b *Broker) Unsubscribe(s *Subscription) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[s]; ok {
		delete(b.subs, s)
		s.end(nil)
	}
}

func (s *Subscription) end(err error) {
	s.err = err
	close(s.done)
	if s.notify != nil {
		s.notify()
	}
}

// RevokeKey ends the subscriptions made with key.
func (b *Broker) RevokeKey(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		if s.key == key {
			delete(b.subs, s)
			s.end(ErrRevoked)
		}
	}
}

// Subscribers counts the open subscriptions.
func (b *Broker) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// Run tails the log until ctx ends, then ends every subscription.
func (b *Broker) Run(ctx context.Context) error {
	sys := privacy.DecisionContext(ctx, privacy.Allow)
	last, err := b.head(sys)
	for err != nil { // the database may be down at start: keep trying until it answers
		b.log.Warn("finding the head of the event log", "err", err)
		select {
		case <-ctx.Done():
			b.close()
			return nil
		case <-time.After(time.Second):
		}
		last, err = b.head(sys)
	}
	b.mu.Lock()
	b.last = last
	b.mu.Unlock()
	close(b.ready)
	defer b.close()
	tick := time.NewTicker(b.poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-b.wake:
		case <-tick.C:
		}
		if err := b.drain(sys); err != nil && ctx.Err() == nil {
			b.log.Warn("reading the event log", "err", err)
		}
	}
}

func (b *Broker) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for s := range b.subs {
		delete(b.subs, s)
		s.end(ErrClosed)
	}
}

// head is the sequence number of the newest event of any organization.
func (b *Broker) head(ctx context.Context) (int64, error) {
	ev, err := b.client.Event.Query().Order(ent.Desc(entevent.FieldSeq)).First(ctx)
	if ent.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return ev.Seq, nil
}

// drain hands every event after the last delivered one to the subscribers, in the
// global commit order (seq), which within one organization is position order.
func (b *Broker) drain(ctx context.Context) error {
	const batch = 500
	for {
		b.mu.Lock()
		last := b.last
		b.mu.Unlock()
		evs, err := b.client.Event.Query().Where(entevent.SeqGT(last)).
			Order(ent.Asc(entevent.FieldSeq)).Limit(batch).All(ctx)
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			return nil
		}
		b.mu.Lock()
		for _, ev := range evs {
			b.deliver(ev)
		}
		b.last = evs[len(evs)-1].Seq
		b.mu.Unlock()
		if len(evs) < batch {
			return nil
		}
	}
}

// deliver hands ev to each matching subscriber without ever blocking; b.mu is held.
func (b *Broker) deliver(ev *ent.Event) {
	for s := range b.subs {
		if s.org != ev.OrgID || (len(s.types) > 0 && !slices.Contains(s.types, ev.Type)) {
			continue
		}
		if !s.offer(ev) {
			delete(b.subs, s)
			s.end(ErrLagged)
			continue
		}
		if s.notify != nil {
			s.notify()
		}
	}
}
