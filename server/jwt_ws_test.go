package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/gorilla/websocket"

	"github.com/flytrap/flytrap/server/auth"
	"github.com/flytrap/flytrap/server/auth/authtest"
)

// A JWT stops working on an open WebSocket when it expires, as it does over HTTP:
// new operations are refused and running subscriptions end at their next heartbeat.
func TestJWTExpiresOnOpenWebsocket(t *testing.T) {
	key := authtest.NewRSAKey(t, "k1", jwt.SigningMethodRS256, "RS256")
	srv, hs, org := jwtServer(t, key, func(cfg *Config) { cfg.StreamHeartbeat = 100 * time.Millisecond })
	srv.resolver.CredentialCheck = 100 * time.Millisecond

	// Accepted for one or two more seconds: exp is within the leeway.
	claims := authtest.ValidClaims()
	claims["org_id"], claims["exp"] = org.ID, time.Now().Add(-auth.Leeway).Unix()+2
	token := key.Sign(t, claims)
	open := func() *websocket.Conn {
		// The legacy protocol: its keep-alives need no answer while the test sleeps.
		d := websocket.Dialer{Subprotocols: []string{"graphql-ws"}}
		c, _, err := d.Dial("ws"+strings.TrimPrefix(hs.URL, "http")+"/graphql", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		c.WriteJSON(map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + token}})
		var m map[string]any
		if err := c.ReadJSON(&m); err != nil || m["type"] != "connection_ack" {
			t.Fatalf("connection_init: %v %v", m, err)
		}
		return c
	}
	read := func(c *websocket.Conn) map[string]any {
		for {
			var m map[string]any
			if err := c.ReadJSON(&m); err != nil {
				t.Fatal(err)
			}
			if m["type"] != "ka" && m["type"] != "complete" {
				return m
			}
		}
	}
	c := open()
	sub := open()
	sub.WriteJSON(map[string]any{"id": "s", "type": "start", "payload": map[string]any{"query": "subscription { events { id } }"}})
	c.WriteJSON(map[string]any{"id": "1", "type": "start", "payload": map[string]any{"query": "{ viewer { orgID } }"}})
	if m := read(c); m["type"] != "data" || strings.Contains(asJSON(t, m), "errors") {
		t.Fatalf("before expiry: %v", m)
	}
	for srv.LiveSubscribers() != 1 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(time.Until(time.Unix(claims["exp"].(int64), 0).Add(auth.Leeway + 100*time.Millisecond)))

	c.WriteJSON(map[string]any{"id": "2", "type": "start", "payload": map[string]any{"query": "{ viewer { orgID } }"}})
	if m := read(c); m["type"] != "error" || !strings.Contains(asJSON(t, m), CodeUnauthenticated) {
		t.Fatalf("after expiry: %v", m)
	}
	deadline := time.Now().Add(5 * time.Second)
	for srv.LiveSubscribers() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the expired token's subscription is still running")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func asJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return string(b)
}
