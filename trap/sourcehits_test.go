package trap

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/flytraptest/testdb"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/store"
)

// A returned token's hit is found whether its received_at is near its id's time (the
// bounded look-up, one day's partition on PostgreSQL) or far from it (the look-up again
// without the bound), on both databases and with hits partitioned by day.
func TestSourceHitsNearAndFarFromTheirIDs(t *testing.T) {
	testdb.ForEachBackend(t, func(t *testing.T, be testdb.Backend) {
		ctx := privacy.DecisionContext(context.Background(), privacy.Allow)
		db, err := store.Open(ctx, be.DSN(t))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		org := db.Client.Organization.Create().SetName("acme").SaveX(ctx)
		ses := db.Client.Session.Create().SetOrgID(org.ID).SetSourceIP("192.0.2.7").SaveX(ctx)
		e, err := New(ctx, DefaultConfig(), db.Client, db.Dialect, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC().Truncate(time.Millisecond)
		idAt := func(at time.Time) string {
			return ids.Format(ids.Hit, ulid.MustNew(ulid.Timestamp(at), ulid.DefaultEntropy()))
		}
		stored := map[string]time.Time{
			idAt(now):                        now.Add(3 * time.Second), // as the listener makes them
			idAt(now.Add(-2 * time.Hour)):    now.Add(-2 * time.Hour),
			idAt(now):                        now.AddDate(0, 0, -3), // stored another way: far from its id
			idAt(now.AddDate(0, 0, -40)):     now.AddDate(0, 0, -40),
			ids.Format(ids.Hit, ulid.ULID{}): now, // the id of 1970
		}
		var refs []decoy.TokenRef
		for id, at := range stored {
			db.Client.Hit.Create().SetID(id).SetOrgID(org.ID).SetSessionID(ses.ID).SetMethod("GET").SetPath("/").
				SetHeaders(map[string][]string{}).SetSourceIP("192.0.2.7").SetReceivedAt(at).ExecX(ctx)
			refs = append(refs, decoy.TokenRef{HitID: id, Origin: decoy.OriginHit})
		}
		missing := idAt(now.Add(-time.Minute)) // a token whose hit is gone
		refs = append(refs, decoy.TokenRef{HitID: missing, Origin: decoy.OriginHit})
		got, err := e.sourceHits(ctx, db.Client, []*job{{rec: &hitRecord{refs: refs}}})
		if err != nil {
			t.Fatal(err)
		}
		for id, at := range stored {
			if h, ok := got[id]; !ok || !h.receivedAt.Equal(at) || h.session != ses.ID {
				t.Errorf("hit %s (received %s): %+v, %t", id, at, h, ok)
			}
		}
		if _, ok := got[missing]; ok || len(got) != len(stored) {
			t.Errorf("found %d hits, want %d and not the missing one", len(got), len(stored))
		}
	})
}
