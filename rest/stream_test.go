package rest_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// sseMsg is one Server-Sent Events message.
type sseMsg struct{ ID, Data, Comment, Retry string }

// openStream connects to the event stream and returns a channel of its messages.
func openStream(t *testing.T, env *ft.Env, token, query, lastID string) (*http.Response, <-chan sseMsg) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env.HTTP.URL+"/api/v1/events/stream"+query, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := env.HTTP.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan sseMsg, 1000)
	if res.StatusCode != http.StatusOK {
		close(out)
		return res, out
	}
	go func() {
		defer close(out)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		var m sseMsg
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				out <- m
				m = sseMsg{}
			case strings.HasPrefix(line, ":"):
				m.Comment = strings.TrimSpace(line[1:])
			case strings.HasPrefix(line, "id: "):
				m.ID = line[4:]
			case strings.HasPrefix(line, "data: "):
				m.Data = line[6:]
			case strings.HasPrefix(line, "retry: "):
				m.Retry = line[7:]
			}
		}
	}()
	return res, out
}

// nextEvent returns the next message that carries an event, skipping retry hints and heartbeats.
func nextEvent(t *testing.T, c <-chan sseMsg) sseMsg {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-c:
			if !ok {
				t.Fatal("stream ended")
			}
			if m.Data != "" {
				return m
			}
		case <-deadline:
			t.Fatal("no event within 10s")
		}
	}
}

// overHTTP2 is env served over TLS with HTTP/2, where a stream cannot take its
// connection over and is written through the response writer instead.
func overHTTP2(t *testing.T, env *ft.Env) *ft.Env {
	h2 := httptest.NewUnstartedServer(env.Server.Handler())
	h2.EnableHTTP2 = true
	h2.StartTLS()
	t.Cleanup(h2.Close)
	e := *env
	e.HTTP = h2
	return &e
}

func TestStreamLiveAndResume(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		base := ft.Start(t, b, func(c *server.Config) { c.StreamHeartbeat = 200 * time.Millisecond })
		for _, proto := range []string{"HTTP/1.1", "HTTP/2.0"} {
			t.Run(proto, func(t *testing.T) {
				env := base
				if proto == "HTTP/2.0" {
					env = overHTTP2(t, base)
				}
				testStreamLiveAndResume(t, env, proto)
			})
		}
	})
}

func testStreamLiveAndResume(t *testing.T, env *ft.Env, proto string) {
	a := env.Tenant("acme-" + proto)
	other := env.Tenant("other-" + proto)
	env.CreateTrap(a.ReadWrite, "before", "api")

	res, c := openStream(t, env, a.ReadOnly, "", "")
	if res.Proto != proto {
		t.Fatalf("stream served over %s, want %s", res.Proto, proto)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	if res.Header.Get("Cache-Control") != "no-store" || res.Header.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("headers %v", res.Header)
	}
	first := <-c
	if first.Retry == "" {
		t.Fatalf("first message %+v, want a retry hint", first)
	}
	// A new reader starts at the head: the earlier trap's event is not replayed.
	env.CreateTrap(other.ReadWrite, "someone else's", "api")
	id1 := env.CreateTrap(a.ReadWrite, "live-1", "api")
	m1 := nextEvent(t, c)
	if !strings.Contains(m1.Data, id1) || !strings.Contains(m1.Data, `"type":"trap.created"`) {
		t.Fatalf("first live event %+v, want trap.created of %s", m1, id1)
	}
	// Heartbeats arrive while idle.
	for got := false; !got; {
		select {
		case m := <-c:
			got = m.Comment != ""
		case <-time.After(5 * time.Second):
			t.Fatal("no heartbeat")
		}
	}
	// Resume after m1 on a new connection: events written in between arrive once, in order.
	id2 := env.CreateTrap(a.ReadWrite, "gap-2", "api")
	id3 := env.CreateTrap(a.ReadWrite, "gap-3", "api")
	_, c2 := openStream(t, env, a.ReadOnly, "", m1.ID)
	for _, want := range []string{id2, id3} {
		if m := nextEvent(t, c2); !strings.Contains(m.Data, want) {
			t.Fatalf("resumed stream gave %s, want %s", m.Data, want)
		}
	}
	id4 := env.CreateTrap(a.ReadWrite, "live-4", "api")
	if m := nextEvent(t, c2); !strings.Contains(m.Data, id4) {
		t.Fatalf("after resume got %s, want %s", m.Data, id4)
	}
	// The same resume through ?cursor= works too, with a type filter.
	_, c3 := openStream(t, env, a.ReadOnly, "?type=trap.created&cursor="+m1.ID, "")
	if m := nextEvent(t, c3); !strings.Contains(m.Data, id2) {
		t.Fatalf("cursor resume gave %s, want %s", m.Data, id2)
	}
}

func TestStreamLimitsAndErrors(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) { c.MaxStreamsPerOrg = 1 })
	a := env.Tenant("acme")
	res, _ := openStream(t, env, a.ReadOnly, "", "")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("first stream: %d", res.StatusCode)
	}
	res2, _ := openStream(t, env, a.ReadOnly, "", "")
	if res2.StatusCode != http.StatusTooManyRequests || res2.Header.Get("Retry-After") == "" {
		t.Fatalf("second stream: %d %v, want 429 with Retry-After", res2.StatusCode, res2.Header)
	}
	for _, q := range []string{"?cursor=nope", "?type=nope", "?bogus=1"} {
		if res, _ := openStream(t, env, a.ReadOnly, q, ""); res.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", q, res.StatusCode)
		}
	}
	if res, _ := openStream(t, env, "ftk_bad", "", ""); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("bad key: %d, want 401", res.StatusCode)
	}
}

func TestStreamEndsOnRevocationAndShutdown(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0])
	a := env.Tenant("acme")
	key := env.Key(a.Org.ID, "READ_ONLY")
	_, c := openStream(t, env, key, "", "")
	<-c // retry hint: the stream is open
	keys := env.MustGraphQL(a.Admin, `{ apiKeys(first: 100) { edges { node { id prefix } } } }`, nil)
	var id string
	for _, e := range ft.Dig(keys, "apiKeys", "edges").([]any) {
		if strings.HasPrefix(key, ft.Dig(e, "node", "prefix").(string)) {
			id = ft.Dig(e, "node", "id").(string)
		}
	}
	env.MustGraphQL(a.Admin, `mutation($id: ID!) { revokeApiKey(id: $id) { id } }`, map[string]any{"id": id})
	waitClosed(t, c)

	_, c2 := openStream(t, env, a.ReadOnly, "", "")
	<-c2
	env.Server.Stop()
	waitClosed(t, c2)
}

func waitClosed(t *testing.T, c <-chan sseMsg) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-c:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("stream still open")
		}
	}
}
