package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// wsSession is a signed-in GraphQL WebSocket of either subprotocol.
type wsSession struct {
	t      *testing.T
	c      *websocket.Conn
	legacy bool
	n      int
}

func openSession(t *testing.T, env *ft.Env, protocol, key string) *wsSession {
	t.Helper()
	c, _, err := dialWS(t, env, protocol, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.WriteJSON(wsMsg{Type: "connection_init", Payload: map[string]any{"Authorization": "Bearer " + key}})
	readUntil(t, c, "connection_ack")
	return &wsSession{t: t, c: c, legacy: protocol == "graphql-ws"}
}

// send starts an operation and returns its id.
func (s *wsSession) send(query string) string {
	s.t.Helper()
	s.n++
	id := fmt.Sprint(s.n)
	typ := "subscribe"
	if s.legacy {
		typ = "start"
	}
	if err := s.c.WriteJSON(wsMsg{ID: id, Type: typ, Payload: map[string]any{"query": query}}); err != nil {
		s.t.Fatal(err)
	}
	return id
}

// result reads the operation's answer: its data and the code of its first error.
func (s *wsSession) result(id string) (data map[string]any, code string) {
	s.t.Helper()
	for {
		var m struct {
			ID      string `json:"id"`
			Type    string `json:"type"`
			Payload any    `json:"payload"`
		}
		if err := s.c.ReadJSON(&m); err != nil {
			s.t.Fatalf("waiting for operation %s: %v", id, err)
		}
		if m.ID != id {
			continue
		}
		switch m.Type {
		case "next", "data":
			p, _ := m.Payload.(map[string]any)
			data, _ = p["data"].(map[string]any)
			code, _ = ft.Dig(p, "errors", 0, "extensions", "code").(string)
			return data, code
		case "error":
			code, _ = ft.Dig(m.Payload, 0, "extensions", "code").(string)
			if code == "" {
				code = "error"
			}
			return nil, code
		}
	}
}

// query runs a query or mutation and returns its data and first error code.
func (s *wsSession) query(q string) (map[string]any, string) {
	s.t.Helper()
	return s.result(s.send(q))
}

func countTraps(t *testing.T, env *ft.Env, key string) int {
	t.Helper()
	d := env.MustGraphQL(key, `{ traps { totalCount } }`, nil)
	n, _ := ft.Dig(d, "traps", "totalCount").(float64)
	return int(n)
}

// Mutations over a WebSocket run as over HTTP, one transaction each: they used to panic
// in entgql's transaction wrapper and take the whole process down.
func TestWebsocketMutations(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		for _, protocol := range []string{"graphql-transport-ws", "graphql-ws"} {
			t.Run(protocol, func(t *testing.T) {
				before := countTraps(t, env, a.ReadOnly)
				s := openSession(t, env, protocol, a.ReadWrite)
				d, code := s.query(`mutation { createTrap(input:{name:"over ws", type: page}) { id path } }`)
				if code != "" || ft.Dig(d, "createTrap", "id") == nil {
					t.Fatalf("createTrap over %s: %v %s", protocol, d, code)
				}
				path := ft.Dig(d, "createTrap", "path").(string)
				if n := countTraps(t, env, a.ReadOnly); n != before+1 {
					t.Fatalf("%d traps after the mutation committed, want %d", n, before+1)
				}
				// Refused, invalid, conflicting: each rolled back, the socket and process alive.
				_, code = s.query(`mutation { createTrap(input:{name:"dup", type: page, path: "` + path + `"}) { id } }`)
				if code != server.CodeConflict {
					t.Fatalf("duplicate path: code %q", code)
				}
				_, code = s.query(`mutation { createTrap(input:{name:"", type: nope}) { id } }`)
				if code == "" || code == server.CodeInternal {
					t.Fatalf("invalid mutation: code %q", code)
				}
				ro := openSession(t, env, protocol, a.ReadOnly)
				_, code = ro.query(`mutation { createTrap(input:{name:"ro", type: page}) { id } }`)
				if code != server.CodeForbidden {
					t.Fatalf("read-only key: code %q", code)
				}
				// Two fields in one mutation: the second fails, so the first is rolled back too.
				_, code = s.query(`mutation { a: createTrap(input:{name:"a", type: api, path: "/wsa-` + protocol + `"}) { id }
					b: createTrap(input:{name:"b", type: api, path: "` + path + `"}) { id } }`)
				if code != server.CodeConflict {
					t.Fatalf("two-field mutation: code %q", code)
				}
				if n := countTraps(t, env, a.ReadOnly); n != before+1 {
					t.Fatalf("%d traps after failed mutations, want %d: a failed mutation was not rolled back", n, before+1)
				}
				if d, code := s.query(`{ organization { id } }`); code != "" || ft.Dig(d, "organization", "id") != a.Org.ID {
					t.Fatalf("query after mutations: %v %s", d, code)
				}
			})
		}
		if n := server.WebsocketPanics(env.Server); n != 0 {
			t.Fatalf("%d panics recovered", n)
		}
	})
}

// A panic in one operation is answered as an internal error to that operation only,
// counted, and leaves the connection and the process serving.
func TestWebsocketPanicIsContained(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0])
	a := env.Tenant("acme")
	var calls atomic.Int32
	server.SetWebsocketAdmit(env.Server, func(context.Context) error {
		if calls.Add(1) == 2 { // the first is connection_init's
			panic("boom")
		}
		return nil
	})
	s := openSession(t, env, "graphql-transport-ws", a.ReadOnly)
	if _, code := s.query(`{ organization { id } }`); code != server.CodeInternal {
		t.Fatalf("panicking operation: code %q, want %s", code, server.CodeInternal)
	}
	if n := server.WebsocketPanics(env.Server); n != 1 {
		t.Fatalf("%d panics counted, want 1", n)
	}
	if d, code := s.query(`{ organization { id } }`); code != "" || ft.Dig(d, "organization", "id") != a.Org.ID {
		t.Fatalf("the next operation on the same socket: %v %s", d, code)
	}
	if res, _ := env.Get(a.ReadOnly, "/dashboard/api/traps"); res.StatusCode != http.StatusOK {
		t.Fatalf("HTTP after the panic: %d", res.StatusCode)
	}
}

// Every operation on an open socket is authorised as an HTTP request would be now.
func TestWebsocketRevokedKeyStopsAtOnce(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, func(c *server.Config) { c.StreamHeartbeat = 100 * time.Millisecond })
		server.SetCredentialCheck(env.Server, 100*time.Millisecond)
		a := env.Tenant("acme")
		for _, protocol := range []string{"graphql-transport-ws", "graphql-ws"} {
			t.Run(protocol, func(t *testing.T) {
				victim := env.Key(a.Org.ID, "ADMIN")
				s := openSession(t, env, protocol, victim)
				d, code := s.query(`{ viewer { keyID } }`)
				keyID, _ := ft.Dig(d, "viewer", "keyID").(string)
				if code != "" || keyID == "" {
					t.Fatalf("viewer: %v %s", d, code)
				}
				sub := openSession(t, env, protocol, victim)
				sub.send(`subscription { events { id } }`)
				waitSubscribers(t, env, 1)
				env.MustGraphQL(a.Admin, `mutation($id: ID!) { revokeApiKey(id: $id) { id } }`, map[string]any{"id": keyID})

				_, code = s.query(`mutation { createApiKey(input:{name:"minted", scope: ADMIN}) { key } }`)
				if code != server.CodeUnauthenticated {
					t.Fatalf("a revoked admin key's mutation: code %q, want %s", code, server.CodeUnauthenticated)
				}
				if c := readClose(t, s.c); c != 4401 {
					t.Fatalf("socket closed with %d, want 4401", c)
				}
				d = env.MustGraphQL(a.Admin, `{ apiKeys { edges { node { name } } } }`, nil)
				if strings.Contains(fmt.Sprint(d), "minted") {
					t.Fatalf("the revoked key minted a key: %v", d)
				}
				// The running subscription ends at its next heartbeat.
				waitSubscribers(t, env, 0)
			})
		}
	})
}

// Operations on a socket draw from the same per-key rate limit as HTTP requests.
func TestWebsocketOperationsAreRateLimited(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) { c.RateLimit, c.RateBurst = 0.01, 4 })
	a := env.Tenant("acme")
	s := openSession(t, env, "graphql-transport-ws", a.ReadOnly) // signing in takes the first token
	for i := range 3 {
		if _, code := s.query(`{ organization { id } }`); code != "" {
			t.Fatalf("operation %d within the burst: %s", i+1, code)
		}
	}
	if _, code := s.query(`{ organization { id } }`); code != server.CodeRateLimited {
		t.Fatalf("operation over the burst: code %q, want %s", code, server.CodeRateLimited)
	}
	if res, _ := env.Get(a.ReadOnly, "/dashboard/api/traps"); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("HTTP with the same key after the socket used its burst: %d, want 429", res.StatusCode)
	}
	// Nor can it sign in again to start over: connection_init takes a token too.
	c, _, err := dialWS(t, env, "graphql-transport-ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.WriteJSON(wsMsg{Type: "connection_init", Payload: map[string]any{"Authorization": "Bearer " + a.ReadOnly}})
	if code := readClose(t, c); code != 4429 {
		t.Fatalf("connection_init with the burst used: close %d, want 4429", code)
	}
}

// The per-organization limit counts subscriptions on WebSockets and SSE streams together.
func TestStreamLimitCountsSubscriptions(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) { c.MaxStreamsPerOrg = 2 })
	a := env.Tenant("acme")
	s := openSession(t, env, "graphql-transport-ws", a.ReadOnly)
	first := s.send(`subscription { events { id } }`)
	s.send(`subscription { threatDetected { id } }`)
	waitSubscribers(t, env, 2)
	if _, code := s.query(`subscription { events { id } }`); code != server.CodeRateLimited {
		t.Fatalf("third subscription: code %q, want %s", code, server.CodeRateLimited)
	}
	if res, body := env.Get(a.ReadOnly, "/api/v1/events/stream"); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("SSE stream beyond the limit: %d %s", res.StatusCode, body)
	}
	other := env.Tenant("other")
	if _, code := openSession(t, env, "graphql-transport-ws", other.ReadOnly).query(`{ organization { id } }`); code != "" {
		t.Fatalf("another organization: %s", code)
	}
	s.c.WriteJSON(wsMsg{ID: first, Type: "complete"})
	waitSubscribers(t, env, 1)
	o := openSession(t, env, "graphql-transport-ws", a.ReadOnly)
	o.send(`subscription { events { id } }`)
	waitSubscribers(t, env, 2)
}

// A refused connection_init counts toward its address's failed-authentication limit, and
// a blocked address cannot open a socket to try again.
func TestWebsocketFailedInitsAreLimited(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) { c.AuthFailureRate, c.AuthFailureBurst = 0.001, 2 })
	for range 2 {
		c, _, err := dialWS(t, env, "graphql-transport-ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		c.WriteJSON(wsMsg{Type: "connection_init", Payload: map[string]any{"Authorization": "Bearer ftk_nope"}})
		if code := readClose(t, c); code != 4401 {
			t.Fatalf("bad key: close %d, want 4401", code)
		}
	}
	_, res, err := dialWS(t, env, "graphql-transport-ws", nil)
	if err == nil || res == nil || res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("upgrade from a blocked address: %v %v", res, err)
	}
}
