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

// FuzzWebsocketMessage sends one arbitrary message on a signed-in GraphQL WebSocket of a
// real server, then a query. Whatever the message, nothing panics, and the connection
// either answers the query or was closed with a close code.
// go test ./server/ -run '^$' -fuzz '^FuzzWebsocketMessage$' -fuzztime 1m
func FuzzWebsocketMessage(f *testing.F) {
	env := ft.Start(f, ft.Backends()[0])
	a := env.Tenant("acme")
	url := "ws" + strings.TrimPrefix(env.HTTP.URL, "http") + "/graphql"
	for _, m := range []string{
		`{"type":"ping"}`, `{"type":"pong","payload":{"x":1}}`,
		`{"id":"1","type":"subscribe","payload":{"query":"{ organization { id } }"}}`,
		`{"id":"1","type":"subscribe","payload":{"query":"mutation { createTrap(input:{name:\"x\", type: page}) { id } }"}}`,
		`{"id":"2","type":"subscribe","payload":{"query":"subscription { events { id } }","variables":{"a":[1,2]}}}`,
		`{"id":"2","type":"complete"}`, `{"type":"connection_init"}`, `{"id":"","type":"subscribe"}`,
		`{"id":"3","type":"subscribe","payload":"nope"}`, `{"type":"connection_terminate"}`, `[]`, `null`, `{`,
	} {
		f.Add(m, false)
		f.Add(m, true)
	}
	f.Fuzz(func(t *testing.T, msg string, legacy bool) {
		protocol := "graphql-transport-ws"
		if legacy {
			protocol = "graphql-ws"
		}
		d := websocket.Dialer{Subprotocols: []string{protocol}, HandshakeTimeout: 5 * time.Second}
		c, _, err := d.Dial(url, http.Header{"Authorization": {"Bearer " + a.ReadWrite}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		c.WriteJSON(map[string]any{"type": "connection_init"})
		c.WriteMessage(websocket.TextMessage, []byte(msg))
		start := "subscribe"
		if legacy {
			start = "start"
		}
		c.WriteJSON(map[string]any{"id": "probe", "type": start, "payload": map[string]any{"query": "{ organization { id } }"}})
		for {
			var m map[string]any
			if err := c.ReadJSON(&m); err != nil {
				if ce := (*websocket.CloseError)(nil); !strings.Contains(err.Error(), "close") && !asClose(err, &ce) {
					t.Fatalf("the connection ended without a close code: %v", err)
				}
				break
			}
			if m["id"] == "probe" && (m["type"] == "next" || m["type"] == "data" || m["type"] == "error") {
				break
			}
		}
		if n := server.WebsocketPanics(env.Server); n != 0 {
			t.Fatalf("%d panics in WebSocket connections", n)
		}
	})
}

func asClose(err error, ce **websocket.CloseError) bool {
	c, ok := err.(*websocket.CloseError)
	*ce = c
	return ok
}
