package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/app"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/retention"
)

// A reader whose cursor points before events retention deleted is told so (410 /
// CURSOR_EXPIRED) on the REST list, the SSE stream, the GraphQL connection and the
// subscription, never served a page with a hole; a caught-up reader is not disturbed.
func TestEventsCursorOlderThanRetention(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		for range 3 {
			env.CreateTrap(a.ReadWrite, "t", "page") // trap.created at positions 1, 2, 3
		}
		edges := ft.Dig(env.MustGraphQL(a.ReadOnly, `{ events(first: 3) { edges { cursor } } }`, nil), "events", "edges").([]any)
		gqlFirst := ft.Dig(edges[0], "cursor").(string) // after position 1

		// A month later, the purge (its clock a month ahead) deletes the three.
		cfg := retention.DefaultConfig()
		cfg.Hits, cfg.Signals, cfg.Prompts, cfg.Deliveries, cfg.Sessions, cfg.Pause = 0, 0, 0, 0, 0, 0
		later := func() time.Time { return time.Now().Add(31 * retention.Day) }
		purge := func() {
			t.Helper()
			res, err := retention.New(env.DB.SQL, env.DB.Dialect, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), later).Purge(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if res.Events != 3 {
				t.Fatalf("purged %d events, want 3", res.Events)
			}
		}
		purge()

		list := func(cursor string) (int, string) {
			t.Helper()
			res, body := env.Get(a.ReadOnly, "/api/v1/events?cursor="+cursor)
			return res.StatusCode, string(body)
		}
		// The log is empty, but a reader at 1 missed 2 and 3.
		if st, body := list(app.EventCursor(1)); st != http.StatusGone || !strings.Contains(body, `"success":false`) || !strings.Contains(body, "without a cursor") {
			t.Fatalf("cursor after 1 with 2 and 3 purged: %d %s", st, body)
		}
		if st, body := list(app.EventCursor(3)); st != http.StatusOK {
			t.Fatalf("a caught-up cursor: %d %s", st, body)
		}
		for range 2 {
			env.CreateTrap(a.ReadWrite, "t", "page") // positions 4 and 5
		}
		if st, body := list(app.EventCursor(2)); st != http.StatusGone || !strings.Contains(body, "position 4") {
			t.Fatalf("cursor after 2 with 3 purged: %d %s", st, body)
		}
		for _, c := range []string{app.EventCursor(3), app.EventCursor(0)} {
			st, body := list(c)
			var page struct {
				Events []struct{ ID string } `json:"events"`
			}
			json.Unmarshal([]byte(body), &page)
			if st != http.StatusOK || len(page.Events) != 2 {
				t.Fatalf("cursor %s: %d %s", c, st, body)
			}
		}
		// With a type filter the page does not start at the next position: still no false alarm.
		if res, body := env.Get(a.ReadOnly, "/api/v1/events?type=trap.created&cursor="+app.EventCursor(3)); res.StatusCode != http.StatusOK {
			t.Fatalf("filtered: %d %s", res.StatusCode, body)
		}

		// SSE: Last-Event-ID (or ?cursor=) into the hole answers 410 before any stream.
		stream := func(header, query string) *http.Response {
			t.Helper()
			req, _ := http.NewRequest(http.MethodGet, env.HTTP.URL+"/api/v1/events/stream"+query, nil)
			req.Header.Set("Authorization", "Bearer "+a.ReadOnly)
			if header != "" {
				req.Header.Set("Last-Event-ID", header)
			}
			res, err := env.HTTP.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		res := stream(app.EventCursor(1), "")
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusGone || !strings.Contains(string(body), "?cursor="+app.EventCursor(0)) {
			t.Fatalf("stream resumed into the hole: %d %s", res.StatusCode, body)
		}
		res = stream("", "?cursor="+app.EventCursor(0)) // the documented restart
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("restart from the start of the log: %d", res.StatusCode)
		}

		// GraphQL: the connection after a cursor into the hole, and the subscription.
		r := env.GraphQL(a.ReadOnly, `query($c: Cursor) { events(first: 10, after: $c) { edges { node { id } } } }`, map[string]any{"c": gqlFirst})
		if r.Code() != "CURSOR_EXPIRED" || r.Status != http.StatusOK && r.Status != http.StatusGone {
			t.Fatalf("events connection after a purged cursor: %d %s", r.Status, r.Raw)
		}
		s := openSession(t, env, "graphql-transport-ws", a.ReadOnly)
		if _, code := s.result(s.send(`subscription { events(after: "` + gqlFirst + `") { id } }`)); code != "CURSOR_EXPIRED" {
			t.Fatalf("subscription after a purged cursor: code %q", code)
		}
	})
}
