package trap_test

import (
	"context"
	"net/http"
	"testing"
	"time"

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
