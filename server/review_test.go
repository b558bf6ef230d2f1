package server_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/flytrap/flytrap/ent"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// The rate limit taken before the key lookup holds whatever the spelling of the header: the
// same key with more whitespace after "Bearer" (which authentication accepts) used to be a
// header never seen, so each spelling of a limited key cost a lookup again (and an entry of
// the cache of headers). Shown as TestRateLimitBeforeTheKeyLookup shows it: the key revoked
// underneath still answers 429 while its bucket is empty, whatever the spelling.
func TestRateLimitBeforeTheLookupIgnoresSpelling(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, func(c *server.Config) { c.RateLimit, c.RateBurst = 0.1, 2 }) // a token every 10 s: the refusals wait up to 1 s each (overRate)
		a := env.Tenant("a")
		get := func(token string) int {
			res, _ := env.Get(token, "/dashboard/api/traps")
			return res.StatusCode
		}
		for i := range 2 {
			if s := get(a.ReadOnly); s != http.StatusOK {
				t.Fatalf("request %d within the burst: %d", i, s)
			}
		}
		q := "UPDATE api_keys SET revoked_at = ? WHERE org_id = ?"
		if b.Name == "postgres" {
			q = "UPDATE api_keys SET revoked_at = $1 WHERE org_id = $2"
		}
		if _, err := env.DB.SQL.ExecContext(context.Background(), q, time.Now().UTC(), a.Org.ID); err != nil {
			t.Fatal(err)
		}
		for _, token := range []string{a.ReadOnly, " " + a.ReadOnly, "  " + a.ReadOnly, "\t" + a.ReadOnly, a.ReadOnly + " "} {
			if s := get(token); s != http.StatusTooManyRequests {
				t.Errorf("Bearer %q on an empty bucket: %d, want 429 before any lookup", token, s)
			}
		}
	})
}

// bigHits seeds a session of org with n hits whose bodies are 16 KiB of text that does not
// compress, and returns the session.
func bigHits(t *testing.T, env *ft.Env, org string, n int) *ent.Session {
	t.Helper()
	s := seedSession(t, env, org, nil)
	body := make([]byte, 12<<10)
	_, _ = rand.Read(body)
	text := base64.StdEncoding.EncodeToString(body)[:16<<10]
	bulk := make([]*ent.HitCreate, n)
	now := time.Now().UTC()
	for i := range bulk {
		bulk[i] = env.DB.Client.Hit.Create().SetOrgID(org).SetSessionID(s.ID).SetMethod("POST").SetPath("/decoy").
			SetSourceIP(s.SourceIP).SetHeaders(map[string][]string{"Accept": {"*/*"}}).SetBody(text).
			SetReceivedAt(now).SetReceivedHour(now.Unix() / 3600)
	}
	if _, err := env.DB.Client.Hit.CreateBulk(bulk...).Save(ft.System()); err != nil {
		t.Fatal(err)
	}
	return s
}

// A WebSocket client that stops reading keeps no API slot: an operation's answer is written
// after its slot is released. It used to be written in the slot, so a read-only key's socket
// that read nothing held every slot (--api-concurrency, one on two cores) for the 10 s of
// each blocked write, one queued operation after another, and every other tenant's request
// waited for its deadline (503).
func TestDeafWebsocketHoldsNoAPISlot(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, func(c *server.Config) { c.APIConcurrencyLimit, c.RequestTimeout = 1, time.Second })
		a, other := env.Tenant("attacker"), env.Tenant("other")
		bigHits(t, env, a.Org.ID, 100)
		s := openSession(t, env, "graphql-transport-ws", a.ReadOnly)
		// About 1.6 MB an answer: the socket's buffers fill within a few, and the client reads none.
		for range 30 {
			s.send(`{ sessions(first: 1) { edges { node { hits(first: 100) { edges { node { body } } } } } } }`)
		}
		// The operations run one at a time in the slot, then wait to write without it: once
		// they have run (seconds under the race detector on a loaded machine), the slot is
		// free for good. Held while writing, it would stay taken as long as the socket is deaf.
		var statuses []int
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			r := env.GraphQL(other.ReadOnly, `{ traps { totalCount } }`, nil)
			if r.Status == http.StatusOK && len(r.Errors) == 0 {
				return
			}
			statuses = append(statuses, r.Status)
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("another tenant's requests for 30 s while a deaf socket's operations wait to write: %v, want one 200", statuses)
	})
}

// A WebSocket upgraded without credentials has not authenticated until its connection_init
// has: it counts toward --max-unauthenticated-conns until then, as the HTTP connection it
// was did. Its upgrade used to free its place (the connection is taken over), so an
// anonymous visitor held any number of sockets, a reader goroutine and a file each, for the
// 10 s connection_init may take.
func TestAnonymousWebsocketsCountAsUnauthenticated(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) { c.MaxUnauthConns = 2 })
	a := env.Tenant("acme")
	first, _, err := dialWS(t, env, "graphql-transport-ws", nil) // the first is let in: not read, to sign in below
	if err != nil {
		t.Fatal(err)
	}
	held := 1
	for range 4 {
		c, _, err := dialWS(t, env, "graphql-transport-ws", nil)
		if err != nil {
			continue // closed on accept: over the cap
		}
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		_, _, err = c.ReadMessage()
		var ne interface{ Timeout() bool }
		if errors.As(err, &ne) && ne.Timeout() {
			held++ // still open, waiting for its connection_init
		} else if !websocket.IsCloseError(err, websocket.CloseTryAgainLater) {
			t.Errorf("an anonymous WebSocket over the cap: %v, want close 1013", err)
		}
	}
	if held > 2 {
		t.Fatalf("%d anonymous WebSockets held open at once, want at most --max-unauthenticated-conns (2)", held)
	}
	// Signing in frees its place.
	_ = first.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := first.WriteJSON(wsMsg{Type: "connection_init", Payload: map[string]any{"Authorization": "Bearer " + a.ReadOnly}}); err != nil {
		t.Fatal(err)
	}
	readUntil(t, first, "connection_ack")
	deadline := time.Now().Add(5 * time.Second)
	for server.UnauthenticatedConns(env.Server) != held-1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d unauthenticated connections after one signed in, want %d", server.UnauthenticatedConns(env.Server), held-1)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
