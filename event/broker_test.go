package event_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/event"
	ft "github.com/flytrap/flytrap/flytraptest"
)

// leaks checks, once t and its cleanups are done, that no goroutine it started is left.
func leaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

func startBroker(t *testing.T, c *ent.Client) (*event.Broker, func()) {
	t.Helper()
	b := event.NewBroker(c, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Hour)
	onEvent, onKey := b.Hooks()
	c.Event.Use(onEvent)
	c.APIKey.Use(onKey)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = b.Run(ctx) }()
	<-b.Ready()
	return b, func() { cancel(); <-done }
}

// subscriber is a test's subscription: notified through a channel, holding what it took.
type subscriber struct {
	*event.Subscription
	wake    chan struct{}
	pending []*ent.Event
}

func subscribe(b *event.Broker, org string, types []string, key string) *subscriber {
	s := &subscriber{wake: make(chan struct{}, 1)}
	s.Subscription = b.Subscribe(org, types, key, func() {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	})
	return s
}

func receive(t *testing.T, s *subscriber) *ent.Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		s.pending = append(s.pending, s.Take()...)
		if len(s.pending) > 0 {
			ev := s.pending[0]
			s.pending = s.pending[1:]
			return ev
		}
		select {
		case <-s.wake:
		case <-s.Done:
			t.Fatalf("subscription ended: %v", s.Err())
		case <-deadline:
			t.Fatal("no event within 10s")
		}
	}
}

// TestBrokerDropsSlowSubscribers: a subscriber that stops reading is dropped with
// ErrLagged once its buffer is full, while writers and the other subscribers go on.
func TestBrokerDropsSlowSubscribers(t *testing.T) {
	leaks(t)
	db := openDB(t, ft.Backends()[0])
	sys := ft.System()
	org := db.Client.Organization.Create().SetName("acme").SaveX(sys)
	other := db.Client.Organization.Create().SetName("other").SaveX(sys)
	b, stop := startBroker(t, db.Client)
	defer stop()

	slow := subscribe(b, org.ID, nil, "")
	fast := subscribe(b, org.ID, nil, "")
	filtered := subscribe(b, org.ID, []string{event.TrapDeleted}, "")
	foreign := subscribe(b, other.ID, nil, "")

	total := event.SubscriptionBuffer + 10
	for i := range total {
		if err := appendOne(sys, db.Client, org.ID); err != nil {
			t.Fatal(err)
		}
		// The fast subscriber keeps up, in order.
		if ev := receive(t, fast); ev.Position != int64(i+1) {
			t.Fatalf("fast subscriber got position %d, want %d", ev.Position, i+1)
		}
	}
	select {
	case <-slow.Done:
		if slow.Err() != event.ErrLagged {
			t.Fatalf("slow subscriber ended with %v, want ErrLagged", slow.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("slow subscriber was not dropped")
	}
	if n := len(slow.Take()); n != event.SubscriptionBuffer {
		t.Fatalf("slow subscriber holds %d events, want a full buffer of %d", n, event.SubscriptionBuffer)
	}
	if evs := filtered.Take(); len(evs) > 0 {
		t.Fatalf("type filter let %s through", evs[0].Type)
	}
	if evs := foreign.Take(); len(evs) > 0 {
		t.Fatalf("another organization received %s", evs[0].ID)
	}
	b.RevokeKey("") // keyless subscriptions are not revocable by an empty id… but must not panic
	b.Unsubscribe(fast.Subscription)
	b.Unsubscribe(fast.Subscription) // twice is fine
	stop()
	for _, s := range []*subscriber{filtered, foreign} {
		<-s.Done
		if s.Err() != event.ErrClosed && s.Err() != event.ErrRevoked {
			t.Fatalf("on shutdown a subscription ended with %v", s.Err())
		}
	}
	if b.Subscribers() != 0 {
		t.Fatalf("%d subscribers left after shutdown", b.Subscribers())
	}
}

func TestBrokerRevokesKeysOnCommit(t *testing.T) {
	leaks(t)
	db := openDB(t, ft.Backends()[0])
	sys := ft.System()
	org := db.Client.Organization.Create().SetName("acme").SaveX(sys)
	key := db.Client.APIKey.Create().SetOrgID(org.ID).SetName("k").SetScope("READ_ONLY").
		SetPrefix("ftk_x").SetHash("h").SaveX(sys)
	b, stop := startBroker(t, db.Client)
	defer stop()
	mine := subscribe(b, org.ID, nil, key.ID)
	others := subscribe(b, org.ID, nil, "key_other")

	tx, err := db.Client.Tx(sys)
	if err != nil {
		t.Fatal(err)
	}
	tx.APIKey.UpdateOneID(key.ID).SetRevokedAt(time.Now()).ExecX(sys)
	select {
	case <-mine.Done:
		t.Fatal("revocation took effect before its transaction committed")
	default:
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-mine.Done:
		if mine.Err() != event.ErrRevoked {
			t.Fatalf("ended with %v, want ErrRevoked", mine.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the revoked key's subscription is still open")
	}
	select {
	case <-others.Done:
		t.Fatal("another key's subscription ended")
	default:
	}
}
