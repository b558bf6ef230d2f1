package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// dialAPI opens a raw TCP connection to the API listener.
func dialAPI(t *testing.T, env *ft.Env) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", env.HTTP.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // a safety net; no test waits for it
	return c
}

// closedByServer reports whether the server ended c (EOF or reset), reading past any answer.
func closedByServer(c net.Conn) (bool, error) {
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if err == nil || errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || strings.Contains(err.Error(), "reset") {
		return true, nil
	}
	if errors.As(err, &ne) && ne.Timeout() {
		return false, err
	}
	return true, nil
}

// TestSlowBodyIsCut: a client that sends its body a byte at a time is cut at the read
// timeout, and an anonymous one is answered 401 before a byte of its body is read.
func TestSlowBodyIsCut(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) {
		c.APIReadHeaderTimeout, c.APIReadTimeout = 200*time.Millisecond, 500*time.Millisecond
	})
	a := env.Tenant("acme")

	t.Run("authenticated, slow body", func(t *testing.T) {
		c := dialAPI(t, env)
		const size = 400 // a byte every 50ms: 20s, forty times the read timeout
		fmt.Fprintf(c, "POST /dashboard/api/traps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", a.ReadWrite, size)
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			_, _ = closedByServer(c)
		}()
		for range size {
			select {
			case <-ended:
				return // cut before the body was complete
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := c.Write([]byte("x")); err != nil {
				return // cut
			}
		}
		t.Fatal("the server read a body sent a byte every 50ms for 20s without cutting the connection")
	})

	t.Run("anonymous: 401 before the body is read", func(t *testing.T) {
		c := dialAPI(t, env)
		fmt.Fprintf(c, "POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no answer while the body has not started: %v", err)
		}
		if res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("status %d, want 401", res.StatusCode)
		}
	})

	t.Run("anonymous and silent: cut", func(t *testing.T) {
		c := dialAPI(t, env)
		fmt.Fprintf(c, "GET /dashboard/api/traps HTTP/1.1\r\nHost: x\r\n") // headers never finished
		if closed, err := closedByServer(c); !closed {
			t.Fatalf("a connection that never finished its headers stayed open: %v", err)
		}
	})
}

// TestUnauthenticatedConnectionCap: connections that have not authenticated are
// capped; over the cap a new one is closed at once; authenticating, or closing, frees a place.
func TestUnauthenticatedConnectionCap(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) { c.MaxUnauthConns = 2 })
	a := env.Tenant("acme")
	waitUnauth := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for server.UnauthenticatedConns(env.Server) != n {
			if time.Now().After(deadline) {
				t.Fatalf("%d unauthenticated connections, want %d", server.UnauthenticatedConns(env.Server), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// served reports whether c gets an answer to a request.
	served := func(c net.Conn, auth string) (int, bool) {
		t.Helper()
		req := "GET /dashboard/api/traps HTTP/1.1\r\nHost: x\r\n"
		if auth != "" {
			req += "Authorization: Bearer " + auth + "\r\n"
		}
		if _, err := io.WriteString(c, req+"\r\n"); err != nil {
			return 0, false
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, false
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode, true
	}

	c1, c2 := dialAPI(t, env), dialAPI(t, env)
	waitUnauth(2)
	c3 := dialAPI(t, env)
	if closed, err := closedByServer(c3); !closed {
		t.Fatalf("a third unauthenticated connection over a cap of 2 was kept: %v", err)
	}
	if status, ok := served(c1, a.ReadOnly); !ok || status != http.StatusOK {
		t.Fatalf("an authenticated request on a counted connection: %d %v", status, ok)
	}
	waitUnauth(1) // c1 authenticated: it no longer counts
	c4 := dialAPI(t, env)
	if status, ok := served(c4, ""); !ok || status != http.StatusUnauthorized {
		t.Fatalf("a connection under the cap again: %d %v", status, ok)
	}
	waitUnauth(2) // c2 and c4
	c2.Close()
	waitUnauth(1)
	if status, ok := served(dialAPI(t, env), ""); !ok || status != http.StatusUnauthorized {
		t.Fatalf("after a close freed a place: %d %v", status, ok)
	}
	if status, ok := served(c1, a.ReadOnly); !ok || status != http.StatusOK {
		t.Fatalf("the authenticated connection keeps working: %d %v", status, ok)
	}
}

// clientFrom is an HTTP client whose connections come from the loopback address ip.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: 30 * time.Second}
}

// TestFailedAuthenticationLimit: after too many 401s an address gets 429 with
// Retry-After before its token is looked at, until its bucket refills; another
// address, and its valid key, are not affected.
func TestFailedAuthenticationLimit(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) { c.AuthFailureRate, c.AuthFailureBurst = 0.1, 3 })
	var offset atomic.Int64
	server.SetAuthFailureClock(env.Server, func() time.Time { return time.Now().Add(time.Duration(offset.Load())) })
	a := env.Tenant("acme")
	get := func(c *http.Client, path, key string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, env.HTTP.URL+path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	attacker, other := clientFrom("127.0.0.1"), clientFrom("127.0.0.2")
	if _, err := other.Get(env.HTTP.URL + "/healthz"); err != nil {
		t.Skipf("cannot connect from 127.0.0.2: %v", err)
	}
	for i, key := range []string{"ftk_wrong", "", "not-even-a-key"} {
		if res, body := get(attacker, "/dashboard/api/traps", key); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d %s", i+1, res.StatusCode, body)
		}
	}
	res, body := get(attacker, "/dashboard/api/traps", a.ReadOnly)
	if res.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, `"success":false`) {
		t.Fatalf("a valid key from an address over its failures: %d %s, want 429", res.StatusCode, body)
	}
	retry, err := strconv.Atoi(res.Header.Get("Retry-After"))
	if err != nil || retry < 1 {
		t.Fatalf("Retry-After %q", res.Header.Get("Retry-After"))
	}
	if r := postGraphQL(t, attacker, env, a.ReadOnly); r.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("GraphQL from the same address: %d", r.StatusCode)
	}
	if res, body := get(other, "/dashboard/api/traps", a.ReadOnly); res.StatusCode != http.StatusOK {
		t.Fatalf("a valid key from another address: %d %s", res.StatusCode, body)
	}
	if res, _ := get(other, "/dashboard/api/traps", "ftk_wrong"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a failure from another address: %d, want 401", res.StatusCode)
	}
	offset.Store(int64(time.Duration(retry) * time.Second))
	if res, body := get(attacker, "/dashboard/api/traps", a.ReadOnly); res.StatusCode != http.StatusOK {
		t.Fatalf("after Retry-After: %d %s", res.StatusCode, body)
	}
}

func postGraphQL(t *testing.T, c *http.Client, env *ft.Env, key string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, env.HTTP.URL+"/graphql", strings.NewReader(`{"query":"{ organization { id } }"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

// TestStreamsOutliveTimeouts: an event stream and a GraphQL WebSocket stay open and
// deliver far past the read timeout and the request deadline.
func TestStreamsOutliveTimeouts(t *testing.T) {
	const beat = 100 * time.Millisecond
	const readTimeout, requestTimeout = 300 * time.Millisecond, 2 * time.Second
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) {
		c.APIReadHeaderTimeout, c.APIReadTimeout, c.RequestTimeout = 200*time.Millisecond, readTimeout, requestTimeout
		c.StreamHeartbeat = beat
	})
	a := env.Tenant("acme")
	// Heartbeats cannot come faster than beat, so this many span more than both timeouts.
	beats := int(2*requestTimeout/beat) + 1

	// The event stream, on HTTP/1.1: it takes its connection over.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env.HTTP.URL+"/api/v1/events/stream", nil)
	req.Header.Set("Authorization", "Bearer "+a.ReadOnly)
	res, err := env.HTTP.Client().Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("open stream: %v %v", res, err)
	}
	defer res.Body.Close()
	lines := bufio.NewScanner(res.Body)
	readLine := func() string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the event stream ended: %v", lines.Err())
		}
		return lines.Text()
	}

	// The WebSocket, with a subscription: a reader answers its pings and counts them.
	ws := subscribeWS(t, env, a.ReadOnly, eventsSub, nil)
	waitSubscribers(t, env, 2)
	var pings atomic.Int64
	wsMsgs := make(chan wsMsg, 10)
	wsErr := make(chan error, 1)
	go func() {
		for {
			var m wsMsg
			_ = ws.SetReadDeadline(time.Now().Add(20 * time.Second))
			if err := ws.ReadJSON(&m); err != nil {
				wsErr <- err
				return
			}
			if m.Type == "ping" {
				pings.Add(1)
				_ = ws.WriteJSON(wsMsg{Type: "pong"})
				continue
			}
			wsMsgs <- m
		}
	}()

	for got := 0; got < beats; {
		if readLine() == ": keep-alive" {
			got++
		}
	}
	for pings.Load() < int64(beats) {
		select {
		case err := <-wsErr:
			t.Fatalf("the WebSocket ended after %d pings: %v", pings.Load(), err)
		case m := <-wsMsgs:
			t.Fatalf("unexpected WebSocket message %+v", m)
		case <-time.After(beat):
		}
	}

	id := createTrap(t, env, a.ReadWrite, map[string]any{"name": "late", "type": "api"})["id"].(string)
	for {
		if l := readLine(); strings.HasPrefix(l, "data: ") {
			if !strings.Contains(l, id) {
				t.Fatalf("stream event %s, want one for %s", l, id)
			}
			break
		}
	}
	select {
	case err := <-wsErr:
		t.Fatalf("the WebSocket ended: %v", err)
	case m := <-wsMsgs:
		if m.Type != "next" || ft.Dig(m.Payload, "data", "events", "data", "id") != id {
			t.Fatalf("WebSocket message %+v, want the event of %s", m, id)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no event on the WebSocket within 30s")
	}
	_ = ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
}
