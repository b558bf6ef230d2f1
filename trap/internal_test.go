package trap

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

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

// The page that carried a lure: the one this engine remembers serving it in, else a
// Referer on the same host that the token's page tag confirms; a Referer naming another
// page, or another host, is not believed.
func TestLureCarrier(t *testing.T) {
	key := decoy.Key(strings.Repeat("k", 32))
	pages, _ := lru.New[lurePageKey, string](16)
	e := &Engine{key: key, lurePages: pages}
	_, places := e.Lure(decoy.LureSpec{SiteID: "site_a", Page: "/pricing", Targets: []decoy.LureTarget{{Path: "/t"}}, Count: 1}, time.Now())
	refs := decoy.FindTokens(key, places[0].URL)
	if len(refs) != 1 {
		t.Fatalf("tokens of %s: %v", places[0].URL, refs)
	}
	rec := func(host string, referer ...string) *hitRecord {
		r := &hitRecord{}
		r.Site, r.Host = "site_a", host
		r.Headers = map[string][]string{"Referer": referer}
		return r
	}
	if got := e.lureCarrier(rec("shop.test"), refs[0]); got != "/pricing" {
		t.Errorf("remembered page: %q", got)
	}
	pages.Purge() // served before a restart, or by another instance
	for _, c := range []struct {
		rec  *hitRecord
		want string
	}{
		{rec("shop.test"), ""},
		{rec("shop.test", "https://shop.test/pricing?x=1"), "/pricing"},
		{rec("shop.test", "/pricing"), "/pricing"},
		{rec("shop.test", "https://shop.test/about"), ""},
		{rec("shop.test", "https://evil.test/pricing"), ""},
		{rec("shop.test", "%zz"), ""},
	} {
		if got := e.lureCarrier(c.rec, refs[0]); got != c.want {
			t.Errorf("Referer %v: %q, want %q", c.rec.Headers["Referer"], got, c.want)
		}
	}
	other := *rec("shop.test", "https://shop.test/pricing")
	other.Site = "site_b"
	if got := e.lureCarrier(&other, refs[0]); got != "" {
		t.Errorf("another site's: %q", got)
	}
}
