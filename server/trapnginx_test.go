package server_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// rawTrap sends req as bytes to the trap listener and reads one response.
func rawTrap(t *testing.T, env *ft.Env, req string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", env.Trap.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%.40q: reading the answer: %v", req, err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res, string(body)
}

// TestTrapProtocolErrorsLookLikeNginx: what net/http answers by itself, before any
// handler runs, wears the same nginx disguise as the trap listener's 404.
func TestTrapProtocolErrorsLookLikeNginx(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0])
	notFound, nfBody := rawTrap(t, env, "GET /nothing-here HTTP/1.1\r\nHost: example.com\r\n\r\n")
	if notFound.StatusCode != http.StatusNotFound || !strings.Contains(nfBody, "<hr><center>nginx</center>") {
		t.Fatalf("the listener's 404: %d %q", notFound.StatusCode, nfBody)
	}
	headerNames := func(h http.Header) []string {
		var ks []string
		for k := range h {
			if k != "Connection" {
				ks = append(ks, k)
			}
		}
		slices.Sort(ks)
		return ks
	}
	want404 := headerNames(notFound.Header)

	huge := "GET / HTTP/1.1\r\nHost: example.com\r\nX-Big: " + strings.Repeat("a", 80<<10) + "\r\n\r\n"
	tests := []struct {
		name, req string
		status    int
		title     string
	}{
		{"bad request line", "GARBAGE\r\n\r\n", 400, "400 Bad Request"},
		{"malformed header", "GET / HTTP/1.1\r\nHost: example.com\r\nno colon here\r\n\r\n", 400, "400 Bad Request"},
		{"no Host", "GET / HTTP/1.1\r\n\r\n", 400, "400 Bad Request"},
		{"HTTP/3.0", "GET / HTTP/3.0\r\nHost: example.com\r\n\r\n", 505, "505 HTTP Version Not Supported"},
		{"huge header", huge, 400, "400 Request Header Or Cookie Too Large"},
		{"unsupported Transfer-Encoding", "POST / HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "501 Not Implemented"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, body := rawTrap(t, env, tt.req)
			if res.StatusCode != tt.status {
				t.Errorf("status %d, want %d", res.StatusCode, tt.status)
			}
			if !strings.HasPrefix(body, "<html>\r\n<head><title>"+tt.title+"</title></head>") || !strings.Contains(body, "<hr><center>nginx</center>") {
				t.Errorf("body is not nginx's page: %q", body)
			}
			for _, give := range []string{"MIME", "malformed", "unsupported", "Unsupported", "Request Header Fields"} {
				if strings.Contains(body, give) || strings.Contains(res.Status, give) {
					t.Errorf("%q gives Go away: %q %q", give, res.Status, body)
				}
			}
			if ct := res.Header.Get("Content-Type"); ct != "text/html" {
				t.Errorf("Content-Type %q, want text/html", ct)
			}
			if got := headerNames(res.Header); !slices.Equal(got, want404) {
				t.Errorf("headers %v, the listener's 404 sends %v", got, want404)
			}
			if res.Header.Get("Server") != notFound.Header.Get("Server") {
				t.Errorf("Server %q, the 404 sends %q", res.Header.Get("Server"), notFound.Header.Get("Server"))
			}
		})
	}
}
