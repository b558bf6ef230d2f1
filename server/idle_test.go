package server_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// rawStream opens an SSE stream on a bare TCP connection, reads the response head and
// the retry hint, and leaves it idle: the client side holds no goroutine.
func rawStream(t *testing.T, env *ft.Env, key string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", env.HTTP.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /api/v1/events/stream HTTP/1.1\r\nHost: flytrap.test\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", key)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" ||
		res.Header.Get("X-Request-Id") == "" || len(res.TransferEncoding) == 0 || res.TransferEncoding[0] != "chunked" {
		t.Fatalf("stream head: %d %v %v", res.StatusCode, res.Header, res.TransferEncoding)
	}
	line, err := bufio.NewReader(res.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "retry: ") {
		t.Fatalf("first line %q, %v", line, err)
	}
	return c, br
}

// idleSubscription opens a subscription and reads nothing more. It speaks the legacy
// protocol, whose keep-alives need no answer (a graphql-transport-ws client that
// leaves a ping unanswered is dropped).
func idleSubscription(t *testing.T, env *ft.Env, key string) *websocket.Conn {
	t.Helper()
	return subscribeOn(t, env, "graphql-ws", key, eventsSub, nil)
}

// goroutinesSettle waits until the goroutine count is at most want, and returns it.
func goroutinesSettle(want int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(10 * time.Second); n > want && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(20 * time.Millisecond)
	}
	return n
}

// An idle event stream holds no goroutine on the server and an idle subscription one
// (its connection's reader): what lets one instance hold thousands of each. When the
// clients go, so does everything they held.
func TestIdleConnectionsHoldNoGoroutines(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) {
		// Often enough that a stream notices its client left within the test's wait (two
		// beats: the first write after a close may still succeed), rare enough that 40
		// streams' heartbeats (each a goroutine while it checks the credential and writes)
		// do not keep the count above the idle one on a loaded machine: 100 ms did in a
		// race run, 500 ms did at load 15 (39 goroutines, each beat waiting on the database).
		c.StreamHeartbeat = 2 * time.Second
		c.MaxStreamsPerOrg = 1000
	})
	a := env.Tenant("acme")
	time.Sleep(50 * time.Millisecond)
	base := runtime.NumGoroutine()
	const n = 40
	var streams []net.Conn
	var first *bufio.Reader
	for i := range n {
		c, br := rawStream(t, env, a.ReadOnly)
		streams = append(streams, c)
		if i == 0 {
			first = br
		}
	}
	waitSubscribers(t, env, n)
	if got := goroutinesSettle(base + 3); got > base+3 {
		t.Fatalf("%d idle event streams hold %d goroutines, want none", n, got-base)
	}
	var subs []*websocket.Conn
	for range n {
		subs = append(subs, idleSubscription(t, env, a.ReadOnly))
	}
	waitSubscribers(t, env, 2*n)
	if got := goroutinesSettle(base + n + 3); got > base+n+3 {
		t.Fatalf("%d idle subscriptions hold %d goroutines, want one each", n, got-base)
	}
	// They still deliver, heartbeats and all.
	env.MustGraphQL(a.ReadWrite, `mutation { createTrap(input:{name:"live", type: api}) { id } }`, nil)
	if got := ft.Dig(readUntil(t, subs[0], "data").Payload, "data", "events", "type"); got != "trap.created" {
		t.Fatalf("subscription got %v", got)
	}
	_ = streams[0].SetReadDeadline(time.Now().Add(20 * time.Second)) // rawStream's 10 s may have gone on the waits above
	for {
		line, err := first.ReadString('\n')
		if err != nil {
			t.Fatalf("event stream: %v", err)
		}
		if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"trap.created"`) {
			break
		}
	}
	for _, c := range append(streams, subs[0].NetConn()) {
		c.Close()
	}
	for _, c := range subs[1:] {
		c.Close()
	}
	env.HTTP.Client().CloseIdleConnections() // the mutation's keep-alive connection
	// A stream learns that its client left at its next write, a heartbeat at the latest.
	deadline := time.Now().Add(10 * time.Second)
	for env.Server.LiveSubscribers() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := env.Server.LiveSubscribers(); got != 0 {
		t.Fatalf("%d subscribers left after every client went", got)
	}
	if got := goroutinesSettle(base); got > base {
		t.Fatalf("%d goroutines left after every client went", got-base)
	}
}

// readClose reads until the connection closes and returns the close code.
func readClose(t *testing.T, c *websocket.Conn) int {
	t.Helper()
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		if ce := (*websocket.CloseError)(nil); errors.As(err, &ce) {
			return ce.Code
		}
		return -1
	}
}

func TestWebsocketProtocolErrors(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0])
	a := env.Tenant("acme")
	dial := func() *websocket.Conn {
		c, _, err := dialWS(t, env, "graphql-transport-ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	initialised := func() *websocket.Conn {
		c := dial()
		c.WriteJSON(wsMsg{Type: "connection_init", Payload: map[string]any{"Authorization": "Bearer " + a.ReadOnly}})
		readUntil(t, c, "connection_ack")
		return c
	}
	sub := map[string]any{"query": eventsSub}

	c := dial()
	c.WriteJSON(wsMsg{ID: "1", Type: "subscribe", Payload: sub})
	if code := readClose(t, c); code != 4401 {
		t.Errorf("subscribe before connection_init: close %d, want 4401", code)
	}
	c = initialised()
	c.WriteJSON(wsMsg{Type: "connection_init"})
	if code := readClose(t, c); code != 4429 {
		t.Errorf("a second connection_init: close %d, want 4429", code)
	}
	c = initialised()
	c.WriteJSON(wsMsg{ID: "1", Type: "subscribe", Payload: sub})
	c.WriteJSON(wsMsg{ID: "1", Type: "subscribe", Payload: sub})
	if code := readClose(t, c); code != 4409 {
		t.Errorf("a second subscription with the same id: close %d, want 4409", code)
	}
	for _, bad := range []string{`{"type":"no-such-type"}`, `not json`, `{"type":"subscribe","payload":{}}`} {
		c = initialised()
		c.WriteMessage(websocket.TextMessage, []byte(bad))
		if code := readClose(t, c); code != 4400 {
			t.Errorf("%s: close %d, want 4400", bad, code)
		}
	}
	// A client that never sends connection_init is closed with 4408.
	server.SetWebsocketInitTimeout(env.Server, 200*time.Millisecond)
	c = dial()
	if code := readClose(t, c); code != 4408 {
		t.Errorf("no connection_init: close %d, want 4408", code)
	}
	// A message over the size cap ends the connection (1009, message too big).
	c = initialised()
	c.WriteMessage(websocket.TextMessage, []byte(`{"type":"ping","payload":{"x":"`+strings.Repeat("x", 2<<20)+`"}}`))
	if code := readClose(t, c); code != websocket.CloseMessageTooBig {
		t.Errorf("an oversized message: close %d, want %d", code, websocket.CloseMessageTooBig)
	}
	// Complete stops a subscription; the connection goes on.
	c = initialised()
	c.WriteJSON(wsMsg{ID: "s", Type: "subscribe", Payload: sub})
	waitSubscribers(t, env, 1)
	c.WriteJSON(wsMsg{ID: "s", Type: "complete"})
	waitSubscribers(t, env, 0)
	c.WriteJSON(wsMsg{ID: "q", Type: "subscribe", Payload: map[string]any{"query": "{ organization { id } }"}})
	m := readUntil(t, c, "next")
	if got := ft.Dig(m.Payload, "data", "organization", "id"); got != a.Org.ID {
		t.Fatalf("query after complete: %v (message %+v)", got, m)
	}
}

func TestWebsocketKeepAliveAndShutdown(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) { c.StreamHeartbeat = 100 * time.Millisecond })
	a := env.Tenant("acme")

	// A client that never answers the pings is dropped after the second one.
	silent := subscribeWS(t, env, a.ReadOnly, eventsSub, nil)
	for {
		var m wsMsg
		if err := silent.ReadJSON(&m); err != nil {
			break // closed by the server
		}
	}
	// The legacy protocol gets its "ka" messages.
	legacy, _, err := dialWS(t, env, "graphql-ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	legacy.WriteJSON(wsMsg{Type: "connection_init", Payload: map[string]any{"Authorization": "Bearer " + a.ReadOnly}})
	readUntil(t, legacy, "connection_ack")
	for kas := 0; kas < 3; {
		var m wsMsg
		if err := legacy.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
		if m.Type == "ka" {
			kas++
		}
	}
	// One that answers stays (shut down right after its last pong, before it owes another).
	alive := subscribeWS(t, env, a.ReadOnly, eventsSub, nil)
	waitSubscribers(t, env, 1)
	pings := 0
	for pings < 5 {
		var m wsMsg
		if err := alive.ReadJSON(&m); err != nil {
			t.Fatalf("after %d pings: %v", pings, err)
		}
		if m.Type == "ping" {
			pings++
			alive.WriteJSON(wsMsg{Type: "pong"})
		}
	}
	// Shutting down closes every WebSocket with 1001 (going away).
	env.Server.Stop()
	for _, c := range []*websocket.Conn{alive, legacy} {
		for {
			_, msg, err := c.ReadMessage()
			if err == nil {
				if strings.Contains(string(msg), `"ping"`) {
					c.WriteJSON(wsMsg{Type: "pong"})
				}
				continue
			}
			if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
				t.Fatalf("at shutdown: %v, want close 1001", err)
			}
			break
		}
	}
}
