package event_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flytrap/flytrap/ent"
	entevent "github.com/flytrap/flytrap/ent/event"
	"github.com/flytrap/flytrap/event"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/store"
)

func openDB(t *testing.T, b ft.Backend) *store.DB {
	t.Helper()
	db, err := store.Open(t.Context(), b.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestAppendOutsideTransaction(t *testing.T) {
	if _, err := event.Append(t.Context(), nil, "org_x", event.TrapCreated, nil); err != event.ErrNoTx {
		t.Fatalf("got %v, want ErrNoTx", err)
	}
}

// TestPositionsCommitInOrder has many writers append concurrently while a reader
// tails by position: every batch the reader sees must continue exactly where the
// last one ended, so a cursor-following reader can never skip an event.
func TestPositionsCommitInOrder(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		db := openDB(t, b)
		sys := ft.System()
		org := db.Client.Organization.Create().SetName("acme").SaveX(sys)
		const writers, perWriter = 8, 25
		total := writers * perWriter

		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for range writers {
			wg.Go(func() {
				for range perWriter {
					if err := appendOne(sys, db.Client, org.ID); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()

		var last int64
		seen := 0
		for finished := false; !finished || seen < total; {
			select {
			case <-done:
				finished = true
			default:
			}
			evs, err := db.Client.Event.Query().Where(entevent.PositionGT(last)).
				Order(ent.Asc(entevent.FieldPosition)).Limit(50).All(sys)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				if ev.Position != last+1 {
					t.Fatalf("reader at %d saw position %d next: an event would be skipped", last, ev.Position)
				}
				last = ev.Position
				seen++
			}
			if finished && len(evs) == 0 && seen < total {
				t.Fatalf("saw %d of %d events", seen, total)
			}
		}
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	})
}

func appendOne(ctx context.Context, c *ent.Client, org string) error {
	tx, err := c.Tx(ctx)
	if err != nil {
		return err
	}
	if _, err := event.Append(ctx, tx, org, event.TrapCreated, map[string]any{"n": 1}); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func BenchmarkAppend(b *testing.B) {
	for _, be := range ft.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			db, err := store.Open(b.Context(), be.DSN(b))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			sys := ft.System()
			org := db.Client.Organization.Create().SetName("acme").SaveX(sys)
			b.ResetTimer()
			for b.Loop() {
				if err := appendOne(sys, db.Client, org.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Event times never decrease along seq: an event appended after one dated ahead of this
// instance's clock (another instance's clock runs ahead) takes that time. With no clock yet
// (a database from before it), the newest stored event's time is the floor.
func TestEventTimesNeverDecrease(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		db := openDB(t, b)
		sys := ft.System()
		org := db.Client.Organization.Create().SetName("acme").SaveX(sys)
		newest := func() *ent.Event {
			t.Helper()
			ev, err := db.Client.Event.Query().Order(ent.Desc(entevent.FieldSeq)).First(sys)
			if err != nil {
				t.Fatal(err)
			}
			return ev
		}
		if err := appendOne(sys, db.Client, org.ID); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(newest().CreatedAt); d < 0 || d > time.Minute {
			t.Fatalf("the first event is dated %s, not now", newest().CreatedAt)
		}
		ahead := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
		rebind := func(q string) string {
			if b.Name == "sqlite" {
				return strings.ReplaceAll(strings.ReplaceAll(q, "$1", "?"), "$2", "?")
			}
			return q
		}
		if _, err := db.SQL.Exec(rebind("UPDATE sequences SET value = $1 WHERE id = $2"), ahead.Unix(), "events:clock"); err != nil {
			t.Fatal(err)
		}
		if err := appendOne(sys, db.Client, org.ID); err != nil {
			t.Fatal(err)
		}
		if got := newest().CreatedAt; !got.Equal(ahead) {
			t.Fatalf("an event after one dated %s is dated %s", ahead, got)
		}
		// No clock (a log stored before it): the upgrade step starts it at the newest event's
		// time, later than now, which is then the floor.
		further := ahead.Add(time.Hour)
		for _, q := range [][2]string{{"DELETE FROM sequences WHERE id = $1", "events:clock"}, {"DELETE FROM flytrap_upgrades WHERE name = $1", "event-clock-1"}} {
			if _, err := db.SQL.Exec(rebind(q[0]), q[1]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.SQL.Exec(rebind("UPDATE events SET created_at = $1 WHERE id = $2"), further, newest().ID); err != nil {
			t.Fatal(err)
		}
		if ran, err := event.StartClock(sys, db.Client); err != nil || !ran {
			t.Fatalf("starting the clock of a log from before it: ran %v, %v", ran, err)
		}
		if err := appendOne(sys, db.Client, org.ID); err != nil {
			t.Fatal(err)
		}
		if got := newest().CreatedAt; !got.Equal(further) {
			t.Fatalf("with no clock, an event after one dated %s is dated %s", further, got)
		}
		evs := db.Client.Event.Query().Order(ent.Asc(entevent.FieldSeq)).AllX(sys)
		for i := 1; i < len(evs); i++ {
			if evs[i].CreatedAt.Before(evs[i-1].CreatedAt) {
				t.Fatalf("seq %d is dated before seq %d", evs[i].Seq, evs[i-1].Seq)
			}
		}
	})
}
