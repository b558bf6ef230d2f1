package trap_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/flytrap/flytrap/server"
	"github.com/flytrap/flytrap/trap"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// Legacy MCP streams are bounded per address: the next one is refused with 503, and a
// stream's slot is free again once its client leaves.
func TestLegacyMCPStreamsAreBounded(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], trustLocalProxy)
	tn := env.Tenant("acme")
	env.MustGraphQL(tn.ReadWrite, `mutation { createTrap(input:{name:"Tools", type: mcp, path:"/mcp"}) { id } }`, nil)
	open := func(ip string) (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env.Trap.URL+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("User-Agent", "node")
		req.Header.Set("X-Forwarded-For", ip)
		res, err := env.Trap.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res, cancel
	}
	var cancels []context.CancelFunc
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	for i := range trap.MaxMCPStreamsPerAddr {
		res, cancel := open("198.51.100.7")
		cancels = append(cancels, cancel)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %d", i, res.StatusCode)
		}
	}
	res, cancel := open("198.51.100.7")
	cancel()
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Fatalf("stream over the bound: %d", res.StatusCode)
	}
	other, cancelOther := open("198.51.100.8")
	cancelOther()
	if other.StatusCode != http.StatusOK {
		t.Fatalf("another address: %d", other.StatusCode)
	}
	if n := env.Server.Engine().MCPStreams(); n < trap.MaxMCPStreamsPerAddr || n > trap.MaxMCPStreamsPerAddr+1 {
		t.Fatalf("%d streams open", n)
	}
	for _, c := range cancels {
		c()
	}
	cancels = nil
	deadline := time.Now().Add(5 * time.Second)
	for env.Server.Engine().MCPStreams() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams still open 5 s after their clients left", env.Server.Engine().MCPStreams())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// openLegacyStream opens a legacy MCP stream of env's /mcp trap for a client at ip (an
// X-Forwarded-For from the trusted local proxy); the stream closes with the test.
func openLegacyStream(t *testing.T, env *ft.Env, ip string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env.Trap.URL+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", "node")
	req.Header.Set("X-Forwarded-For", ip)
	res, err := env.Trap.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
	}
	return res
}

// One client cannot hold the instance's legacy MCP streams: an IPv6 client counts per
// /64 (it may use any address in it), a network per IPv4 /24 or IPv6 /48, and one site's
// visitors take at most half of the instance's streams.
func TestLegacyMCPStreamsPerClientNetworkAndSite(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], trustLocalProxy)
	tn := env.Tenant("acme")
	env.MustGraphQL(tn.ReadWrite, `mutation { createTrap(input:{name:"Tools", type: mcp, path:"/mcp"}) { id } }`, nil)
	opened := func(ips []string) int {
		n := 0
		for _, ip := range ips {
			if openLegacyStream(t, env, ip).StatusCode == http.StatusOK {
				n++
			}
		}
		return n
	}
	var ips []string
	for i := range 16 { // sixteen addresses of one /64
		ips = append(ips, fmt.Sprintf("2001:db8:1:1::%x", i+1))
	}
	if n := opened(ips); n != trap.MaxMCPStreamsPerAddr {
		t.Fatalf("16 addresses of one /64 opened %d streams, want %d", n, trap.MaxMCPStreamsPerAddr)
	}
	ips = nil
	for i := range 16 { // sixteen /64s of the same /48: its first one is full already
		ips = append(ips, fmt.Sprintf("2001:db8:1:%x::1", i+2))
	}
	if n := opened(ips); n != trap.MaxMCPStreamsPerNet-trap.MaxMCPStreamsPerAddr {
		t.Fatalf("a /48 opened %d more streams, want %d", n, trap.MaxMCPStreamsPerNet-trap.MaxMCPStreamsPerAddr)
	}
	ips = nil
	for i := range 10 { // IPv4: ten addresses of one /24 after six of another
		ips = append(ips, fmt.Sprintf("198.51.100.%d", i+1))
	}
	if n := opened(ips); n != 10 {
		t.Fatalf("ten IPv4 clients of one /24 opened %d streams", n)
	}
	ips = nil
	for i := range 20 { // the site's cap: 16 + 10 open, 6 more
		ips = append(ips, fmt.Sprintf("203.0.%d.1", i))
	}
	if n := opened(ips); n != trap.MaxMCPStreamsPerSite-26 {
		t.Fatalf("%d more streams opened on the site, want %d", n, trap.MaxMCPStreamsPerSite-26)
	}
	if n := env.Server.Engine().MCPStreams(); n != trap.MaxMCPStreamsPerSite {
		t.Fatalf("%d streams open, want the site's cap %d", n, trap.MaxMCPStreamsPerSite)
	}
}

// A stream whose client posts nothing ends after the idle time, freeing its slot.
func TestLegacyMCPStreamIdleEnds(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) {
		trustLocalProxy(c)
		c.Trap.MCPStreamIdle = 300 * time.Millisecond
	})
	tn := env.Tenant("acme")
	env.MustGraphQL(tn.ReadWrite, `mutation { createTrap(input:{name:"Tools", type: mcp, path:"/mcp"}) { id } }`, nil)
	res := openLegacyStream(t, env, "198.51.100.7")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, res.Body)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the stream failed: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("an idle stream is still open after 15 s")
	}
	deadline := time.Now().Add(5 * time.Second)
	for env.Server.Engine().MCPStreams() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams open", env.Server.Engine().MCPStreams())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
