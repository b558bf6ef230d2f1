package trap

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/flytraptest/testdb"
	"github.com/flytrap/flytrap/store"
)

// TestALoneHitIsNotKeptWaiting: with no other request waiting for the writer (an open MCP
// stream does not), the writer commits a hit at once instead of lingering for company. The
// linger here is a minute and the write timeout 20 seconds: a writer that waited would
// answer 503.
func TestALoneHitIsNotKeptWaiting(t *testing.T) {
	testdb.ForEachBackend(t, func(t *testing.T, be testdb.Backend) {
		ctx := privacy.DecisionContext(context.Background(), privacy.Allow)
		db, err := store.Open(ctx, be.DSN(t))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		org := db.Client.Organization.Create().SetName("acme").SaveX(ctx)
		site := db.Client.Site.Create().SetOrgID(org.ID).SetName("main").SaveX(ctx)
		db.Client.Trap.Create().SetOrgID(org.ID).SetSiteID(site.ID).SetName("Docs").SetType("page").
			SetPath("/internal/docs").SaveX(ctx)
		db.Client.Trap.Create().SetOrgID(org.ID).SetSiteID(site.ID).SetName("Tools").SetType("mcp").
			SetPath("/mcp").SaveX(ctx)
		cfg := DefaultConfig()
		cfg.Linger, cfg.WriteTimeout = time.Minute, 20*time.Second
		e, err := New(ctx, cfg, db.Client, db.Dialect, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(context.Background())
		go e.Run(runCtx)
		defer func() { stop(); <-e.Done() }()
		srv := httptest.NewServer(e)
		defer srv.Close()

		// An open legacy MCP stream: its handler runs for minutes after its hit is committed,
		// and must not count as a request the writer waits for.
		streamCtx, closeStream := context.WithCancel(context.Background())
		defer closeStream()
		req, _ := http.NewRequestWithContext(streamCtx, http.MethodGet, srv.URL+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		stream, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Body.Close()
		if stream.StatusCode != http.StatusOK {
			t.Fatalf("the MCP stream: %d", stream.StatusCode)
		}

		for i := range 3 { // one visitor after another, as a crawler reads pages
			res, err := http.Get(srv.URL + "/internal/docs")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("request %d: %d, want 200: the writer lingered for hits no other request was making", i, res.StatusCode)
			}
		}
		if n := db.Client.Hit.Query().CountX(ctx); n != 4 {
			t.Fatalf("%d hits stored, want 4 (the stream's and three pages')", n)
		}
		closeStream()
		for deadline := time.Now().Add(10 * time.Second); e.inflight.Load() != 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) { // the handler returns just after its answer reached the client
				t.Fatalf("%d requests still counted in flight", e.inflight.Load())
			}
		}
	})
}
