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
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = b.Run(ctx) }()
	<-b.Ready()
	return b, func() { cancel(); <-done }
}

func receive(t *testing.T, s *event.Subscription) *ent.Event {
	t.Helper()
	select {
	case ev := <-s.C:
		return ev
	case <-s.Done:
		t.Fatalf("subscription ended: %v", s.Err())
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return nil
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

	slow := b.Subscribe(org.ID, nil, "")
	fast := b.Subscribe(org.ID, nil, "")
	filtered := b.Subscribe(org.ID, []string{event.TrapDeleted}, "")
	foreign := b.Subscribe(other.ID, nil, "")

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
	if len(slow.C) != event.SubscriptionBuffer {
		t.Fatalf("slow subscriber holds %d events, want a full buffer of %d", len(slow.C), event.SubscriptionBuffer)
	}
	select {
	case ev := <-filtered.C:
		t.Fatalf("type filter let %s through", ev.Type)
	case ev := <-foreign.C:
		t.Fatalf("another organization received %s", ev.ID)
	default:
	}
	b.RevokeKey("") // keyless subscriptions are not revocable by an empty id… but must not panic
	b.Unsubscribe(fast)
	b.Unsubscribe(fast) // twice is fine
	stop()
	for _, s := range []*event.Subscription{filtered, foreign} {
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
	mine := b.Subscribe(org.ID, nil, key.ID)
	others := b.Subscribe(org.ID, nil, "key_other")

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
