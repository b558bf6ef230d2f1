package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
	"github.com/flytrap/flytrap/viewer"
)

// A subscription sent over plain HTTP is refused at once with 400 / BAD_USER_INPUT,
// without taking a stream slot: it used to hold one until the request deadline (503).
func TestSubscriptionOverHTTPIsRefused(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, func(c *server.Config) { c.MaxStreamsPerOrg, c.RequestTimeout = 1, 2*time.Second })
		a := env.Tenant("acme")
		other := env.Tenant("other")
		// acme's one slot is taken: a subscription over HTTP must not need one to be refused.
		subscribeWS(t, env, a.ReadOnly, `subscription { events { id } }`, nil)
		waitSubscribers(t, env, 1)

		post := func(key, accept string, body map[string]any) (int, []byte) {
			t.Helper()
			raw, _ := json.Marshal(body)
			req, _ := http.NewRequest(http.MethodPost, env.HTTP.URL+"/graphql", bytes.NewReader(raw))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+key)
			if accept != "" {
				req.Header.Set("Accept", accept)
			}
			res, err := env.HTTP.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			out, _ := io.ReadAll(res.Body)
			return res.StatusCode, out
		}
		get := func(key, query string) (int, []byte) {
			t.Helper()
			req, _ := http.NewRequest(http.MethodGet, env.HTTP.URL+"/graphql?query="+url.QueryEscape(query), nil)
			req.Header.Set("Authorization", "Bearer "+key)
			res, err := env.HTTP.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			out, _ := io.ReadAll(res.Body)
			return res.StatusCode, out
		}
		refused := func(what string, status int, body []byte) {
			t.Helper()
			var r ft.Response
			if err := json.Unmarshal(body, &r); err != nil {
				t.Fatalf("%s: %d %s", what, status, body)
			}
			if status != http.StatusBadRequest || r.Code() != server.CodeBadUserInput || !strings.Contains(r.Errors[0].Message, "WebSocket") || r.Data != nil {
				t.Fatalf("%s: %d %s, want 400 BAD_USER_INPUT naming the WebSocket", what, status, body)
			}
		}
		for _, key := range []string{a.ReadOnly, other.ReadOnly} {
			st, body := post(key, "", map[string]any{"query": `subscription { events { id } }`})
			refused("POST", st, body)
			st, body = post(key, "application/graphql-response+json", map[string]any{"query": `subscription { threatDetected { id } }`})
			refused("POST accepting graphql-response+json", st, body)
			st, body = get(key, `subscription { events { id } }`)
			refused("GET", st, body)
			st, body = post(key, "", map[string]any{"query": `query Q { organization { id } } subscription S { events { id } }`, "operationName": "S"})
			refused("POST naming the subscription of two operations", st, body)
		}
		// The query of the same document runs; nothing was subscribed meanwhile.
		st, body := post(other.ReadOnly, "", map[string]any{"query": `query Q { organization { id } } subscription S { events { id } }`, "operationName": "Q"})
		if st != http.StatusOK || !strings.Contains(string(body), other.Org.ID) {
			t.Fatalf("the query beside a subscription: %d %s", st, body)
		}
		if n := env.Server.LiveSubscribers(); n != 1 {
			t.Fatalf("%d live subscribers, want the WebSocket's one", n)
		}
	})
}

// Running subscriptions and event streams re-check their credential at every
// --stream-heartbeat: a key revoked where no broker hears of it (another process writing
// the database) ends them within a few beats. Subscriptions used to wait 15 s whatever
// the heartbeat.
func TestRevocationFollowsStreamHeartbeat(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, func(c *server.Config) { c.StreamHeartbeat = 200 * time.Millisecond })
		a := env.Tenant("acme")
		victim := env.Key(a.Org.ID, viewer.ReadOnly)
		var keyID string
		d := env.MustGraphQL(victim, `{ viewer { keyID } }`, nil)
		keyID, _ = ft.Dig(d, "viewer", "keyID").(string)
		// Each socket answers pings (or graphql-transport-ws would drop it for a missed pong)
		// and reports how its subscription ended.
		ended := make(chan string, 2)
		for _, protocol := range []string{"graphql-transport-ws", "graphql-ws"} {
			c := subscribeOn(t, env, protocol, victim, `subscription { events { id } }`, nil)
			_ = c.SetReadDeadline(time.Time{})
			go func() {
				for {
					var m wsMsg
					if err := c.ReadJSON(&m); err != nil {
						ended <- protocol + ": " + err.Error()
						return
					}
					switch m.Type {
					case "ping":
						_ = c.WriteJSON(wsMsg{Type: "pong"})
					case "complete", "error":
						ended <- protocol + ": " + m.Type
						return
					}
				}
			}()
		}
		sse := openSSE(t, env, victim)
		waitSubscribers(t, env, 3)
		// Behind the service's back: no hook, no NOTIFY, only the re-check can see it.
		q := `UPDATE api_keys SET revoked_at = ? WHERE id = ?`
		if env.DB.Dialect == "postgres" {
			q = `UPDATE api_keys SET revoked_at = $1 WHERE id = $2`
		}
		if _, err := env.DB.SQL.Exec(q, time.Now().UTC(), keyID); err != nil {
			t.Fatal(err)
		}
		waitSubscribers(t, env, 0) // polls for 10 s: 50 heartbeats
		for range 2 {
			if how := <-ended; !strings.HasSuffix(how, ": complete") {
				t.Fatalf("a subscription of the revoked key ended with %s, want complete", how)
			}
		}
		for deadline := time.After(10 * time.Second); ; {
			select {
			case _, open := <-sse:
				if !open {
					return // the stream ended too
				}
			case <-deadline:
				t.Fatal("the event stream of a revoked key is still open")
			}
		}
	})
}
