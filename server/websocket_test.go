package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

type wsMsg struct {
	ID      string         `json:"id,omitempty"`
	Type    string         `json:"type"`
	Payload map[string]any `json:"payload,omitempty"`
}

func dialWS(t *testing.T, env *ft.Env, protocol string, header http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{protocol}, HandshakeTimeout: 5 * time.Second}
	url := "ws" + strings.TrimPrefix(env.HTTP.URL, "http") + "/graphql"
	c, res, err := d.Dial(url, header)
	if c != nil {
		t.Cleanup(func() { c.Close() })
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	}
	return c, res, err
}

// readUntil reads messages until one of type want arrives, skipping keep-alives.
func readUntil(t *testing.T, c *websocket.Conn, want string) wsMsg {
	t.Helper()
	for {
		var m wsMsg
		if err := c.ReadJSON(&m); err != nil {
			t.Fatalf("waiting for %q: %v", want, err)
		}
		if m.Type == want {
			return m
		}
		if m.Type == "error" || m.Type == "connection_error" {
			t.Fatalf("waiting for %q, got %+v", want, m)
		}
	}
}

func TestWebsocketQueries(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		query := map[string]any{"query": "{ organization { id } }"}

		t.Run("graphql-transport-ws with connection_init auth", func(t *testing.T) {
			c, _, err := dialWS(t, env, "graphql-transport-ws", nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.Subprotocol() != "graphql-transport-ws" {
				t.Fatalf("subprotocol %q", c.Subprotocol())
			}
			c.WriteJSON(wsMsg{Type: "connection_init", Payload: map[string]any{"Authorization": "Bearer " + a.ReadOnly}})
			readUntil(t, c, "connection_ack")
			c.WriteJSON(wsMsg{ID: "1", Type: "subscribe", Payload: query})
			m := readUntil(t, c, "next")
			if got := ft.Dig(m.Payload, "data", "organization", "id"); got != a.Org.ID {
				t.Fatalf("organization = %v, want %s", got, a.Org.ID)
			}
			readUntil(t, c, "complete")
		})

		t.Run("legacy graphql-ws with the upgrade request's header", func(t *testing.T) {
			h := http.Header{"Authorization": {"Bearer " + a.Admin}}
			c, _, err := dialWS(t, env, "graphql-ws", h)
			if err != nil {
				t.Fatal(err)
			}
			c.WriteJSON(wsMsg{Type: "connection_init"})
			readUntil(t, c, "connection_ack")
			c.WriteJSON(wsMsg{ID: "1", Type: "start", Payload: query})
			m := readUntil(t, c, "data")
			if got := ft.Dig(m.Payload, "data", "organization", "id"); got != a.Org.ID {
				t.Fatalf("organization = %v, want %s", got, a.Org.ID)
			}
		})

		t.Run("bad token closes with 4401", func(t *testing.T) {
			c, _, err := dialWS(t, env, "graphql-transport-ws", nil)
			if err != nil {
				t.Fatal(err)
			}
			c.WriteJSON(wsMsg{Type: "connection_init", Payload: map[string]any{"Authorization": "Bearer ftk_nope"}})
			if code := readClose(t, c); code != 4401 {
				t.Fatalf("want close 4401, got %d", code)
			}
		})

		t.Run("bad token on the upgrade request is refused with 401", func(t *testing.T) {
			_, res, err := dialWS(t, env, "graphql-transport-ws", http.Header{"Authorization": {"Bearer nope"}})
			if err == nil || res == nil || res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("want 401, got %v %v", res, err)
			}
		})

		t.Run("foreign origin is refused", func(t *testing.T) {
			_, res, err := dialWS(t, env, "graphql-transport-ws", http.Header{"Origin": {"https://evil.example"}})
			if err == nil || res == nil || res.StatusCode != http.StatusForbidden {
				t.Fatalf("want 403, got %v %v", res, err)
			}
		})
	})
}

func TestWebsocketAllowedOrigin(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) { c.AllowedOrigins = []string{"https://dash.example"} })
	a := env.Tenant("acme")
	c, _, err := dialWS(t, env, "graphql-transport-ws", http.Header{"Origin": {"https://dash.example"}})
	if err != nil {
		t.Fatal(err)
	}
	c.WriteJSON(wsMsg{Type: "connection_init", Payload: map[string]any{"Authorization": "Bearer " + a.ReadOnly}})
	readUntil(t, c, "connection_ack")
}
