package trap

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/ids"
)

func TestLinkedPaths(t *testing.T) {
	body := []byte(`<a href="/docs/a">a</a><img src="/img/x.png"><a href="/docs/a">dup</a>` +
		`<a href="https://other/x">ext</a><a data-x="/nope">x</a><a href="/q?x=1#f">q</a><link href="/style.css">` +
		`<a href="/cb/tok123">token</a>`)
	got := decoy.LinkedPaths(body, []decoy.Placement{{Token: "tok123", URL: "/cb/tok123"}})
	want := []string{"/docs/a", "/img/x.png", "/q", "/style.css"}
	if !slices.Equal(got, want) {
		t.Fatalf("LinkedPaths = %q, want %q", got, want)
	}
}

// A trap's decoys link to the same paths whatever the response: the per-response
// token links are left out, so a returning visitor's session state stays unchanged.
func TestLinkedPathsStablePerTrap(t *testing.T) {
	key := decoy.Key(strings.Repeat("k", 32))
	fromSkeleton := 0
	defer func() {
		if fromSkeleton == 0 {
			t.Error("no response came from a skeleton: its links were never compared")
		}
	}()
	for i := range 40 {
		for _, typ := range decoy.Names() {
			spec := decoy.Spec{TrapID: ids.New(ids.Trap), Title: fmt.Sprintf("Trap %d", i), Type: typ, Path: "/internal/docs", Host: "example.com"}
			first := decoy.Render(key, spec, ids.New(ids.Hit))
			again := decoy.Render(key, spec, ids.New(ids.Hit))
			a, b := decoy.LinkedPaths(first.Body, first.Placements), decoy.LinkedPaths(again.Body, again.Placements)
			if !slices.Equal(a, b) {
				t.Fatalf("%s decoy of %s links to %q, then to %q", typ, spec.TrapID, a, b)
			}
			// What a skeleton found once is what each of its responses links to.
			for _, r := range []decoy.Rendered{first, again} {
				if r.Links != nil {
					fromSkeleton++
				}
				if r.Links != nil && !slices.Equal(r.Links, decoy.LinkedPaths(r.Body, r.Placements)) {
					t.Fatalf("%s decoy of %s: its skeleton's links %q, its body's %q", typ, spec.TrapID, r.Links, decoy.LinkedPaths(r.Body, r.Placements))
				}
			}
		}
	}
}

func TestClientIP(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, c := range []struct {
		remote, xff, want string
	}{
		{"203.0.113.5:1234", "198.51.100.1", "203.0.113.5"},        // untrusted peer: header ignored
		{"10.0.0.2:1234", "198.51.100.1", "198.51.100.1"},          // trusted proxy: believed
		{"10.0.0.2:1234", "1.2.3.4, 198.51.100.1", "198.51.100.1"}, // right-most untrusted hop
		{"10.0.0.2:1234", "198.51.100.1, 10.0.0.9", "198.51.100.1"},
		{"10.0.0.2:1234", "garbage", "10.0.0.2"},
		{"[::ffff:203.0.113.5]:1", "", "203.0.113.5"},
	} {
		r := &http.Request{RemoteAddr: c.remote, Header: http.Header{}}
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := clientIP(r, proxies).String(); got != c.want {
			t.Errorf("clientIP(%s, %q) = %s, want %s", c.remote, c.xff, got, c.want)
		}
	}
}
