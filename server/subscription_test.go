package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/flytrap/flytrap/decoy"
	ft "github.com/flytrap/flytrap/flytraptest"
)

// subscribeWS opens a graphql-transport-ws subscription and returns its connection.
func subscribeWS(t *testing.T, env *ft.Env, key, query string, vars map[string]any) *websocket.Conn {
	t.Helper()
	return subscribeOn(t, env, "graphql-transport-ws", key, query, vars)
}

// subscribeOn opens a subscription with the given subprotocol (graphql-transport-ws or
// the legacy graphql-ws) and returns its connection.
func subscribeOn(t *testing.T, env *ft.Env, protocol, key, query string, vars map[string]any) *websocket.Conn {
	t.Helper()
	c, _, err := dialWS(t, env, protocol, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.WriteJSON(wsMsg{Type: "connection_init", Payload: map[string]any{"Authorization": "Bearer " + key}})
	readUntil(t, c, "connection_ack")
	start := "subscribe"
	if protocol == "graphql-ws" {
		start = "start"
	}
	c.WriteJSON(wsMsg{ID: "1", Type: start, Payload: map[string]any{"query": query, "variables": vars}})
	return c
}

// waitSubscribers waits until the instance has n live subscribers: a subscription
// without after: starts at the head of the log once it is set up.
func waitSubscribers(t *testing.T, env *ft.Env, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for env.Server.LiveSubscribers() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d live subscribers, want %d", env.Server.LiveSubscribers(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// nextData reads the next "next" message's data, skipping pings.
func nextData(t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	m := readUntil(t, c, "next")
	if errs, ok := m.Payload["errors"]; ok {
		t.Fatalf("subscription error: %v", errs)
	}
	d, _ := m.Payload["data"].(map[string]any)
	return d
}

const eventsSub = `subscription($after: Cursor, $types: [String!]) { events(after: $after, types: $types) { id type apiVersion createdAt data cursor } }`

func TestEventsSubscription(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		other := env.Tenant("other")
		createTrapGQL := func(key, name string) string {
			d := env.MustGraphQL(key, fmt.Sprintf(`mutation { createTrap(input:{name:%q, type: api}) { id } }`, name), nil)
			return ft.Dig(d, "createTrap", "id").(string)
		}
		createTrapGQL(a.ReadWrite, "before")

		c := subscribeWS(t, env, a.ReadOnly, eventsSub, nil)
		waitSubscribers(t, env, 1)
		createTrapGQL(other.ReadWrite, "not yours")
		id1 := createTrapGQL(a.ReadWrite, "live-1")
		first := nextData(t, c)
		if got := ft.Dig(first, "events", "data", "id"); got != id1 {
			t.Fatalf("first live event is about %v, want %s (no replay of earlier events, none of others)", got, id1)
		}
		cursor := ft.Dig(first, "events", "cursor")
		if ft.Dig(first, "events", "type") != "trap.created" || cursor == nil {
			t.Fatalf("event %v", first)
		}
		c.Close()

		// Resume after the cursor on a new connection: what came meanwhile arrives once, in order.
		id2, id3 := createTrapGQL(a.ReadWrite, "gap-2"), createTrapGQL(a.ReadWrite, "gap-3")
		c2 := subscribeWS(t, env, a.ReadOnly, eventsSub, map[string]any{"after": cursor, "types": []string{"trap.created"}})
		for _, want := range []string{id2, id3} {
			if got := ft.Dig(nextData(t, c2), "events", "data", "id"); got != want {
				t.Fatalf("resumed subscription gave %v, want %s", got, want)
			}
		}
		// The cursor of the events connection (ordered by POSITION) resumes too.
		conn := env.MustGraphQL(a.ReadOnly, `{ events(first: 1, orderBy: {field: POSITION, direction: ASC}) { edges { cursor } } }`, nil)
		c3 := subscribeWS(t, env, a.ReadOnly, eventsSub, map[string]any{"after": ft.Dig(conn, "events", "edges", 0, "cursor")})
		if got := ft.Dig(nextData(t, c3), "events", "data", "name"); got != "live-1" {
			t.Fatalf("resume from the connection's first cursor gave %v, want the second event", got)
		}
	})
}

func TestSubscriptionErrorsAndRevocation(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0])
	a := env.Tenant("acme")
	c := subscribeWS(t, env, a.ReadOnly, eventsSub, map[string]any{"types": []string{"nope"}})
	m := readUntil(t, c, "next")
	if !strings.Contains(fmt.Sprint(m.Payload["errors"]), "not an event type") || !strings.Contains(fmt.Sprint(m.Payload["errors"]), "BAD_USER_INPUT") {
		t.Fatalf("bad type: %v", m)
	}
	readUntil(t, c, "complete")

	key := env.Key(a.Org.ID, "READ_ONLY")
	c2 := subscribeWS(t, env, key, eventsSub, nil)
	waitSubscribers(t, env, 1) // running before the revocation, which would otherwise refuse it (UNAUTHENTICATED)
	keys := env.MustGraphQL(a.Admin, `{ apiKeys(first: 100) { edges { node { id prefix } } } }`, nil)
	for _, e := range ft.Dig(keys, "apiKeys", "edges").([]any) {
		if strings.HasPrefix(key, ft.Dig(e, "node", "prefix").(string)) {
			env.MustGraphQL(a.Admin, `mutation($id: ID!) { revokeApiKey(id: $id) { id } }`, map[string]any{"id": ft.Dig(e, "node", "id")})
		}
	}
	readUntil(t, c2, "complete") // the revoked key's subscription ends
}

func TestThreatDetectedSubscription(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0])
	a := env.Tenant("acme")
	env.MustGraphQL(a.ReadWrite, `mutation { createTrap(input:{name:"Docs", type: page, path:"/internal/docs"}) { id } }`, nil)
	c := subscribeWS(t, env, a.ReadOnly, `subscription { threatDetected { id classification severity signalsFired } }`, nil)
	waitSubscribers(t, env, 1)

	// A regex crawler: fetch the page, request every hidden URL in it.
	get := func(path string) string {
		req, _ := http.NewRequest(http.MethodGet, env.Trap.URL+path, nil)
		req.Header.Set("User-Agent", "python-requests/2.32.3")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	page := get("/internal/docs")
	for _, u := range decoy.TokenURL.FindAllString(page, -1) {
		get(u)
	}
	d := nextData(t, c)
	if ft.Dig(d, "threatDetected", "classification") != "BOT" {
		b, _ := json.Marshal(d)
		t.Fatalf("threatDetected %s, want the crawler's BOT session", b)
	}
}

// openSSE opens the event stream and returns its data lines as they arrive.
func openSSE(t *testing.T, env *ft.Env, key string) <-chan string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, env.HTTP.URL+"/api/v1/events/stream", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := env.HTTP.Client().Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("open stream: %v %v", res, err)
	}
	out := make(chan string, 100)
	go func() {
		defer res.Body.Close()
		defer close(out)
		buf := make([]byte, 64<<10)
		var acc strings.Builder
		for {
			n, err := res.Body.Read(buf)
			acc.Write(buf[:n])
			for {
				s := acc.String()
				i := strings.Index(s, "\n\n")
				if i < 0 {
					break
				}
				if msg := s[:i]; strings.Contains(msg, "data: ") {
					out <- msg
				}
				acc.Reset()
				acc.WriteString(s[i+2:])
			}
			if err != nil {
				return
			}
		}
	}()
	return out
}

func nextSSE(t *testing.T, c <-chan string) string {
	t.Helper()
	select {
	case m, ok := <-c:
		if !ok {
			t.Fatal("stream ended")
		}
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("no stream message within 30s")
	}
	return ""
}
