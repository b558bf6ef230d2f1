package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/retention"
	"github.com/flytrap/flytrap/server"
	"github.com/flytrap/flytrap/store"
)

// On PostgreSQL the service starts with hits partitioned by day and today's partition made
// before the trap listener takes a hit, so hits land in their day's partition, not the
// default one. When retention later drops that day
// whole, the hits are gone from the session's detail while the hourly figures that counted
// them keep them (counters count what happened, not what is stored).
func TestPartitionedHitsThroughTheService(t *testing.T) {
	env := ft.StartOn(t, ft.PostgresDSN(t))
	a := env.Tenant("acme")
	env.MustGraphQL(a.ReadWrite, `mutation { createTrap(input:{name:"Docs", type: page, path:"/internal/docs"}) { id } }`, nil)
	for range 3 {
		res, err := http.Get(env.Trap.URL + "/internal/docs")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("hit: %d", res.StatusCode)
		}
	}
	count := func(q string) (n int) {
		t.Helper()
		if err := env.DB.SQL.QueryRow(q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	today := store.PartitionName("hits", store.Day(time.Now()))
	if n := count(`SELECT COUNT(*) FROM ` + today); n != 3 {
		if store.Day(time.Now()).Equal(store.Day(time.Now().Add(-time.Minute))) { // not across midnight UTC
			t.Fatalf("%d hits in today's partition %s, want 3", n, today)
		}
	}
	if n := count(`SELECT COUNT(*) FROM hits_default`); n != 0 {
		t.Fatalf("%d hits in the default partition", n)
	}
	timeline := func() (sum int) {
		t.Helper()
		_, body := env.Get(a.ReadOnly, "/dashboard/api/analytics/timeline")
		var tl struct {
			Data []struct {
				Hits int `json:"hits"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &tl); err != nil {
			t.Fatalf("timeline: %v %s", err, body)
		}
		for _, b := range tl.Data {
			sum += b.Hits
		}
		return sum
	}
	if n := timeline(); n != 3 {
		t.Fatalf("timeline counts %d hits, want 3", n)
	}

	// Two days on, with hits kept one day, today's partition is past the cut whole.
	cfg := retention.DefaultConfig()
	cfg.Hits, cfg.Pause = retention.Day, 0
	p := server.NewPurger(env.DB, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), func() time.Time { return time.Now().Add(2 * retention.Day) })
	res, err := p.Purge(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Hits != 3 || res.DroppedPartitions < 1 || res.Sessions != 0 {
		t.Fatalf("purge %+v, want today's partition dropped with its 3 hits and the session kept", res)
	}
	if n := count(`SELECT COUNT(*) FROM pg_class WHERE relname = '` + today + `'`); n != 0 {
		t.Fatalf("partition %s still exists", today)
	}
	if n := count(`SELECT COUNT(*) FROM hits`); n != 0 {
		t.Fatalf("%d hits left", n)
	}
	if n := timeline(); n != 3 {
		t.Fatalf("after the drop the timeline counts %d hits, want still 3", n)
	}
	sessions := ft.Dig(env.MustGraphQL(a.ReadOnly, `{ sessions(first: 5) { edges { node { id hitCount } } } }`, nil), "sessions", "edges").([]any)
	if len(sessions) != 1 || ft.Dig(sessions[0], "node", "hitCount") != float64(3) {
		t.Fatalf("the session and its summary should stay: %v", sessions)
	}
}
