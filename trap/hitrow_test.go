package trap

import (
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/flytraptest/testdb"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/record"
	"github.com/flytrap/flytrap/store"
)

// A hit ent's validators refuse fails alone, as it did when ent wrote hits: the batch
// falls back to one hit at a time, and the others are written.
func TestRefusedHitFailsAlone(t *testing.T) {
	testdb.ForEachBackend(t, func(t *testing.T, b testdb.Backend) {
		s := openStore(t, b)
		ctx := privacy.DecisionContext(t.Context(), privacy.Allow)
		e, err := New(ctx, DefaultConfig(), s.Client, s.Dialect, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		org := s.Client.Organization.Create().SetName("acme").SaveX(ctx)
		site := s.Client.Site.Create().SetOrgID(org.ID).SetName("default").SaveX(ctx)
		hitOf := func(path string) *hitRecord {
			return &hitRecord{Hit: record.Hit{ID: ids.New(ids.Hit), Org: org.ID, Status: 200, Observation: detect.Observation{
				Kind: "decoy", Method: "GET", Path: path, IP: netip.MustParseAddr("192.0.2.7"), At: time.Now().UTC(),
			}}}
		}
		good := hitOf("/internal/docs")
		bad := hitOf("/" + strings.Repeat("p", 2048)) // longer than the column keeps
		var batch []*job
		for _, rec := range []*hitRecord{good, bad} {
			rec.Site = site.ID
			rec.prepare()
			batch = append(batch, &job{rec: rec, done: make(chan error, 1)})
		}
		e.write(ctx, batch)
		if err := <-batch[0].done; err != nil {
			t.Fatalf("the valid hit failed: %v", err)
		}
		if err := <-batch[1].done; err == nil {
			t.Fatal("a hit with a path longer than its column was written")
		}
		for rec, want := range map[*hitRecord]bool{good: true, bad: false} {
			if got := s.Client.Hit.Query().Where(hit.ID(rec.ID)).ExistX(ctx); got != want {
				t.Errorf("hit of %d-byte path stored: %t, want %t", len(rec.Path), got, want)
			}
		}
	})
}

// openStore opens a fresh database of backend b for t, closed when t ends.
func openStore(t *testing.T, b testdb.Backend) *store.DB {
	t.Helper()
	s, err := store.Open(t.Context(), b.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
