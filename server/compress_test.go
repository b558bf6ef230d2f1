package server_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/viewer"
)

// rawDo sends req url with exactly the given Accept-Encoding (none when empty): the
// client does not add gzip or decode the body itself.
func rawDo(t *testing.T, req *http.Request, acceptEncoding string) (*http.Response, []byte) {
	t.Helper()
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, body
}

// decode undoes the response's Content-Encoding.
func decode(t *testing.T, enc string, body []byte) []byte {
	t.Helper()
	switch enc {
	case "":
		return body
	case "gzip":
		r, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("gzip: %v", err)
		}
		out, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("gzip: %v", err)
		}
		return out
	case "zstd":
		r, err := zstd.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("zstd: %v", err)
		}
		defer r.Close()
		out, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("zstd: %v", err)
		}
		return out
	}
	t.Fatalf("unexpected Content-Encoding %q", enc)
	return nil
}

var (
	scriptSrc = regexp.MustCompile(`src="(/assets/[^"]+\.js)"`)
	styleHref = regexp.MustCompile(`href="(/assets/[^"]+\.css)"`)
)

// TestCompression: dashboard assets and API JSON are compressed as the client asks
// (zstd preferred, then gzip), decode to the identity bytes, and are identity without
// Accept-Encoding or with only codings the server does not speak.
func TestCompression(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0])
	acme := env.Tenant("Acme")
	for i := range 12 { // a trap list well over the 1 KiB threshold
		env.MustGraphQL(acme.ReadWrite, fmt.Sprintf(`mutation { createTrap(input:{name:"Trap number %d", type: page}) { id } }`, i), nil)
	}

	get := func(path string) func() *http.Request {
		return func() *http.Request {
			req, _ := http.NewRequest(http.MethodGet, env.HTTP.URL+path, nil)
			req.Header.Set("Authorization", "Bearer "+acme.ReadOnly)
			return req
		}
	}
	_, index := rawDo(t, get("/")(), "")
	js, css := scriptSrc.FindSubmatch(index), styleHref.FindSubmatch(index)
	if js == nil || css == nil {
		t.Fatalf("no script or style sheet in the dashboard's index.html:\n%s", index)
	}
	gqlBody := `{"query":"{ traps(first: 50) { totalCount edges { node { id name path type active createdAt } } } }"}`
	for _, c := range []struct {
		name string
		req  func() *http.Request
	}{
		{"dashboard script", get(string(js[1]))},
		{"dashboard style sheet", get(string(css[1]))},
		{"REST JSON", get("/dashboard/api/traps")},
		{"GraphQL JSON", func() *http.Request {
			req, _ := http.NewRequest(http.MethodPost, env.HTTP.URL+"/graphql", strings.NewReader(gqlBody))
			req.Header.Set("Authorization", "Bearer "+acme.ReadOnly)
			req.Header.Set("Content-Type", "application/json")
			return req
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, identity := rawDo(t, c.req(), "")
			if res.StatusCode != http.StatusOK || res.Header.Get("Content-Encoding") != "" {
				t.Fatalf("without Accept-Encoding: %d, Content-Encoding %q", res.StatusCode, res.Header.Get("Content-Encoding"))
			}
			if len(identity) < 1024 {
				t.Fatalf("the identity answer is %d bytes: too small to test compression", len(identity))
			}
			for _, ae := range []struct{ accept, want string }{
				{"gzip", "gzip"},
				{"zstd", "zstd"},
				{"gzip, deflate, br, zstd", "zstd"}, // what Chromium sends
				{"br", ""},                          // not spoken here: identity
				{"gzip;q=0", ""},
				{"identity", ""},
			} {
				res, body := rawDo(t, c.req(), ae.accept)
				if res.StatusCode != http.StatusOK {
					t.Fatalf("Accept-Encoding %q: %d", ae.accept, res.StatusCode)
				}
				if got := res.Header.Get("Content-Encoding"); got != ae.want {
					t.Errorf("Accept-Encoding %q: Content-Encoding %q, want %q", ae.accept, got, ae.want)
				}
				if !strings.Contains(strings.Join(res.Header.Values("Vary"), ","), "Accept-Encoding") {
					t.Errorf("Accept-Encoding %q: no Vary: Accept-Encoding (%v)", ae.accept, res.Header)
				}
				if ae.want != "" && len(body) >= len(identity) {
					t.Errorf("Accept-Encoding %q: %d bytes, not smaller than %d", ae.accept, len(body), len(identity))
				}
				plain := decode(t, res.Header.Get("Content-Encoding"), body)
				if c.name == "GraphQL JSON" || c.name == "REST JSON" {
					// The same query twice: only the request-dependent parts could differ, and these have none.
					if !bytes.Equal(plain, identity) {
						t.Errorf("Accept-Encoding %q: decodes to\n%s\nwant\n%s", ae.accept, plain, identity)
					}
				} else if !bytes.Equal(plain, identity) {
					t.Errorf("Accept-Encoding %q: decodes to %d bytes that differ from the %d identity bytes", ae.accept, len(plain), len(identity))
				}
			}
		})
	}
}

// TestCompressionLeavesStreamsAlone: an event stream asked for with gzip and zstd is
// sent uncompressed and delivers events as they happen; a WebSocket upgrade asking for
// them still works.
func TestCompressionLeavesStreamsAlone(t *testing.T) {
	t.Run("event stream", func(t *testing.T) {
		env := ft.Start(t, ft.Backends()[0])
		acme := env.Tenant("Acme")
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env.HTTP.URL+"/api/v1/events/stream", nil)
		req.Header.Set("Authorization", "Bearer "+acme.ReadOnly)
		req.Header.Set("Accept-Encoding", "gzip, deflate, br, zstd")
		client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
		defer client.CloseIdleConnections()
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Encoding") != "" || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("stream: %d %v", res.StatusCode, res.Header)
		}
		br := bufio.NewReader(res.Body)
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "retry: ") {
			t.Fatalf("first line %q (%v), want the retry hint in plain text", line, err)
		}
		waitSubscribers(t, env, 1)
		env.MustGraphQL(acme.ReadWrite, `mutation { createTrap(input:{name:"Streamed", type: page}) { id } }`, nil)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the stream: %v", err)
			}
			if strings.HasPrefix(line, "data: ") && strings.Contains(line, "trap.created") {
				break
			}
		}
	})

	t.Run("websocket", func(t *testing.T) {
		env := ft.Start(t, ft.Backends()[0])
		acme := env.Tenant("Acme")
		c, res, err := dialWS(t, env, "graphql-transport-ws", http.Header{"Accept-Encoding": {"gzip, deflate, br, zstd"}})
		if err != nil {
			t.Fatalf("dial: %v (%v)", err, res)
		}
		if res.Header.Get("Content-Encoding") != "" {
			t.Errorf("the upgrade answer has Content-Encoding %q", res.Header.Get("Content-Encoding"))
		}
		c.WriteJSON(wsMsg{Type: "connection_init", Payload: map[string]any{"Authorization": "Bearer " + acme.Key(viewer.ReadOnly)}})
		readUntil(t, c, "connection_ack")
		c.WriteJSON(wsMsg{ID: "1", Type: "subscribe", Payload: map[string]any{"query": `subscription { events(types: ["trap.created"]) { type } }`}})
		waitSubscribers(t, env, 1)
		env.MustGraphQL(acme.ReadWrite, `mutation { createTrap(input:{name:"Over the socket", type: page}) { id } }`, nil)
		if got := ft.Dig(nextData(t, c), "events", "type"); got != "trap.created" {
			t.Fatalf("over the WebSocket: %v, want trap.created", got)
		}
	})
}
