package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/crawler"
	"github.com/flytrap/flytrap/crawler/crawlertest"
	"github.com/flytrap/flytrap/detect"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// TestCrawlerVerification runs crawler verification end to end on a real instance: a DNS
// server and the operators' lists on loopback, visitors claiming Googlebot through a
// trusted proxy. What the analyst reads says what was claimed and what verified it; the
// range lists' state is in /metrics and in the database `flytrap stats` reads.
func TestCrawlerVerification(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		t.Cleanup(func() { detect.SetRanges(nil) }) // after the instance stops (cleanups run last first)
		zone := crawlertest.Start(t)
		zone.PTR("203.0.113.7", "crawl-203-0-113-7.googlebot.com")
		zone.Host("crawl-203-0-113-7.googlebot.com", "203.0.113.7")
		zone.PTR("203.0.113.8", "crawl-203-0-113-8.googlebot.com.evil.example")
		zone.Host("crawl-203-0-113-8.googlebot.com.evil.example", "203.0.113.8")
		zone.PTR("203.0.113.20", "crawl-203-0-113-20.googlebot.com")
		zone.Host("crawl-203-0-113-20.googlebot.com", "203.0.113.20")
		zone.Slow("203.0.113.20") // answers once released
		zone.PTR("203.0.113.9", "crawl-203-0-113-9.googlebot.com")
		zone.Host("crawl-203-0-113-9.googlebot.com", "66.249.66.1")
		// Google's list as fetched holds the embedded prefixes and a new one.
		lists := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/googlebot" {
				http.NotFound(w, r)
				return
			}
			io.WriteString(w, `{"creationTime": "2026-11-26T18:00:13.000000", "prefixes": [{"ipv4Prefix": "66.249.64.0/19"}, {"ipv4Prefix": "198.51.100.0/24"}]}`)
		}))
		t.Cleanup(lists.Close)
		urls := map[string]string{}
		for _, s := range crawler.Sources {
			urls[s.Name] = lists.URL + "/" + s.Name
		}
		env := ft.Start(t, b, func(c *server.Config) {
			d := &c.Crawler.DNS
			d.Off, d.Server, d.Timeout, d.Budget = false, zone.Addr, 10*time.Second, time.Second // the answer, not the budget, is tested here
			c.Crawler.Refresh.Interval, c.Crawler.Refresh.URLs = time.Hour, urls
			c.Webhook.AllowPrivate = true // the lists are on loopback
			c.Trap.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
		})
		a := env.Tenant("acme")
		createTrap(t, env, a.ReadWrite, map[string]any{"name": "Docs", "type": "page", "path": "/internal/docs"})
		deadline := time.Now().Add(20 * time.Second)
		for sample(scrape(t, env, ""), "flytrap_crawler_ranges_fetched", map[string]string{"list": "googlebot"}) != 1 {
			if time.Now().After(deadline) {
				t.Fatal("the Googlebot list was never fetched")
			}
			time.Sleep(50 * time.Millisecond)
		}

		const googlebot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
		for _, c := range []struct {
			addr, class, signal, evidence string
		}{
			{"203.0.113.7", "CRAWLER", "CRAWLER_VERIFIED", "verified: reverse DNS crawl-203-0-113-7.googlebot.com, forward-confirmed"},
			{"203.0.113.8", "BOT", "UNVERIFIED_BOT_CLAIM", "reverse DNS crawl-203-0-113-8.googlebot.com.evil.example is outside googlebot.com, google.com"},
			{"203.0.113.9", "BOT", "UNVERIFIED_BOT_CLAIM", "reverse DNS crawl-203-0-113-9.googlebot.com does not resolve back to the address"},
			{"203.0.113.10", "BOT", "UNVERIFIED_BOT_CLAIM", "reverse DNS: no PTR record"},
			{"198.51.100.9", "CRAWLER", "CRAWLER_VERIFIED", "verified: in 198.51.100.0/24 of Google's published googlebot list of 2026-11-26 (fetched)"},
		} {
			visitAs(t, env, googlebot, c.addr)
			checkEvidence(t, env, a.ReadOnly, c.addr, c.class, c.signal, c.evidence)
		}

		// A resolver that has not answered within the budget: the hit is recorded, judged by
		// the ranges, and says so; once it answers, the session's next hit is verified and
		// the session is a crawler again.
		visitAs(t, env, googlebot, "203.0.113.20")
		checkEvidence(t, env, a.ReadOnly, "203.0.113.20", "BOT", "UNVERIFIED_BOT_CLAIM", "reverse DNS: not answered within the budget")
		zone.Release()
		visitAs(t, env, googlebot, "203.0.113.20")
		checkEvidence(t, env, a.ReadOnly, "203.0.113.20", "CRAWLER", "CRAWLER_VERIFIED", "verified: reverse DNS crawl-203-0-113-20.googlebot.com, forward-confirmed")

		fams := scrape(t, env, "")
		for name, want := range map[string]float64{"googlebot": 0, "bingbot": 1, "chatgpt-user": 1} {
			if got := sample(fams, "flytrap_crawler_ranges_stale", map[string]string{"list": name}); got != want {
				t.Errorf("%s stale %v, want %v", name, got, want)
			}
		}
		if got := sample(fams, "flytrap_crawler_dns_lookups_total", nil); got != 6 {
			t.Errorf("%v reverse DNS lookups, want 6 (198.51.100.9's finds no PTR; 203.0.113.20's second hit shares the first's)", got)
		}
		st, err := env.DB.Stats(context.Background(), true)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.CrawlerRanges) != len(crawler.Sources) {
			t.Fatalf("stored lists: %+v", st.CrawlerRanges)
		}
		for _, l := range st.CrawlerRanges {
			switch l.Name {
			case "googlebot":
				if l.Prefixes != 2 || l.FetchedAt == nil || l.LastError != "" || l.ListTime == nil || !l.ListTime.Equal(time.Date(2026, 11, 26, 18, 0, 13, 0, time.UTC)) {
					t.Errorf("googlebot stored: %+v", l)
				}
			default: // 404: the attempt and its error, no list
				if l.Prefixes != 0 || l.FetchedAt != nil || l.LastError != "HTTP 404" {
					t.Errorf("%s stored: %+v", l.Name, l)
				}
			}
		}
	})
}

// visitAs requests the trap as ua from addr, through the trusted local proxy.
func visitAs(t *testing.T, env *ft.Env, ua, addr string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, env.Trap.URL+"/internal/docs", nil)
	req.Header.Set("User-Agent", ua)
	req.Header.Set("X-Forwarded-For", addr)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
}

// checkEvidence waits for addr's session to be class and checks what the analyst reads of
// signal in its "why this verdict": one evidence naming the claim and saying want.
func checkEvidence(t *testing.T, env *ft.Env, token, addr, class, signal, want string) {
	t.Helper()
	q := `{ sessions(first: 1, where: {sourceIP: "` + addr + `"}) { edges { node { classification
		signalGroups { signal evidence } } } } }`
	d := pollGraphQL(t, env, token, q, func(d map[string]any) bool {
		return ft.Dig(d, "sessions", "edges", 0, "node", "classification") == class
	})
	var evidence []string
	for _, g := range ft.Dig(d, "sessions", "edges", 0, "node", "signalGroups").([]any) {
		if g := g.(map[string]any); g["signal"] == signal {
			for _, e := range g["evidence"].([]any) {
				evidence = append(evidence, str(e))
			}
		}
	}
	if len(evidence) != 1 || !strings.Contains(evidence[0], "Googlebot from "+addr) || !strings.Contains(evidence[0], want) {
		t.Errorf("%s: %s evidence %q, want %q", addr, signal, evidence, want)
	}
}
