package detect

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestCheckClaim(t *testing.T) {
	google := LookupUA("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)")
	yandex := LookupUA("Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)")
	claude := LookupUA("Mozilla/5.0 (compatible; ClaudeBot/1.0; +claudebot@anthropic.com)")
	outside := netip.MustParseAddr("203.0.113.7")
	inside := netip.MustParseAddr("66.249.66.1")
	for _, c := range []struct {
		name   string
		a      Agent
		addr   netip.Addr
		dns    DNSCheck
		host   string
		want   ClaimResult
		detail string
	}{
		{"googlebot by reverse DNS outside the ranges", google, outside, DNSConfirmed, "crawl-203-0-113-7.googlebot.com.", ClaimVerified, "reverse DNS crawl-203-0-113-7.googlebot.com, forward-confirmed"},
		{"googlebot in the ranges, DNS not checked", google, inside, DNSNotChecked, "", ClaimVerified, "in 66.249.64.0/19 of Google's published googlebot list of 2026-09-02 (embedded)"},
		{"googlebot in the ranges, PTR elsewhere", google, inside, DNSWrongDomain, "x.example.net", ClaimVerified, "in 66.249.64.0/19"},
		{"googlebot, PTR in the wrong domain", google, outside, DNSWrongDomain, "crawl.googlebot.com.evil.example", ClaimUnverified, "reverse DNS crawl.googlebot.com.evil.example is outside googlebot.com, google.com"},
		{"googlebot, forward mismatch", google, outside, DNSForwardMismatch, "crawl-1-2-3-4.googlebot.com", ClaimUnverified, "does not resolve back"},
		{"googlebot, no PTR", google, outside, DNSNoPTR, "", ClaimUnverified, "reverse DNS: no PTR record"},
		{"googlebot, DNS too slow: the ranges decide", google, outside, DNSPending, "", ClaimUnverified, "outside Google's published googlebot list of 2026-09-02 (embedded); reverse DNS: not answered within the budget"},
		{"confirmed is not believed for a host outside the domains", google, outside, DNSConfirmed, "crawl.evilgooglebot.com", ClaimUnverified, "outside Google's"},
		{"googleusercontent.com proves no googlebot", google, outside, DNSConfirmed, "1-2-3-4.gae.googleusercontent.com", ClaimUnverified, ""},
		{"yandex by reverse DNS", yandex, outside, DNSConfirmed, "spider-203-0-113-7.yandex.com", ClaimVerified, "reverse DNS spider-203-0-113-7.yandex.com"},
		{"yandex, wrong domain", yandex, outside, DNSWrongDomain, "evil.example", ClaimUnverified, "outside yandex.ru, yandex.net, yandex.com"},
		{"yandex, resolver failed: nothing to conclude", yandex, outside, DNSFailed, "", ClaimNone, ""},
		{"yandex, resolver busy: nothing to conclude", yandex, outside, DNSBusy, "", ClaimNone, ""},
		{"yandex from a private address", yandex, netip.MustParseAddr("10.0.0.1"), DNSNotChecked, "", ClaimUnverified, "private"},
		{"claudebot: nothing to check", claude, outside, DNSNotChecked, "", ClaimNone, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := CheckClaim(c.a, c.addr, c.dns, c.host)
			if got.Result != c.want {
				t.Fatalf("result %d, want %d (%s)", got.Result, c.want, got.Detail())
			}
			if d := got.Detail(); !strings.Contains(d, c.detail) {
				t.Errorf("detail %q does not say %q", d, c.detail)
			}
		})
	}
}

func TestHostInDomains(t *testing.T) {
	d := []string{"googlebot.com", "google.com"}
	for host, want := range map[string]bool{
		"crawl-66-249-66-1.googlebot.com.": true, "CRAWL.GOOGLEBOT.COM": true, "google.com": true,
		"evilgooglebot.com": false, "googlebot.com.evil.example": false, "": false, ".": false, "com": false,
	} {
		if got := HostInDomains(host, d); got != want {
			t.Errorf("HostInDomains(%q) = %v", host, got)
		}
	}
}

// TestVerifiedOutweighsEarlierClaim: a genuine crawler's first hit whose reverse DNS was
// not answered in time fires UNVERIFIED_BOT_CLAIM from the ranges; its next hit, confirmed,
// makes it a verified CRAWLER, and no later hit makes it a false claim again.
func TestVerifiedOutweighsEarlierClaim(t *testing.T) {
	ua := "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	o := Observation{At: at, Method: "GET", Path: "/", UA: ua, IP: netip.MustParseAddr("203.0.113.7"), Kind: "decoy", DNS: DNSPending}
	s, out := Observe(Session{UA: ua}, o)
	if len(out.Firings) == 0 || !strings.Contains(firingDetail(out, SignalUnverifiedBotClaim), "not answered within the budget") {
		t.Fatalf("first hit: %+v", out.Firings)
	}
	if out.Verdict.Classification != ClassBot {
		t.Fatalf("first hit: %s", out.Verdict.Classification)
	}
	o.At, o.DNS, o.DNSHost = at.Add(time.Second), DNSConfirmed, "crawl-203-0-113-7.googlebot.com"
	s, out = Observe(s, o)
	if d := firingDetail(out, SignalCrawlerVerified); !strings.Contains(d, "reverse DNS crawl-203-0-113-7.googlebot.com") {
		t.Fatalf("second hit: %+v", out.Firings)
	}
	if v := out.Verdict; v.Classification != ClassCrawler || v.Confidence != 95 {
		t.Fatalf("second hit: %+v", v)
	}
	x := Explain(Evidence{Signals: s.State.Signals, Agent: LookupUA(s.UA), Hits: s.Hits, Sent: s.State.Sent})
	sum := 0
	for _, p := range x.Parts {
		sum += p.Points
		if p.Name == SignalUnverifiedBotClaim && p.Points != 0 {
			t.Errorf("the outweighed claim adds %d points", p.Points)
		}
	}
	if x.Verdict != out.Verdict || sum != x.Raw || x.Rule != 7 {
		t.Errorf("explanation %+v does not add up to %+v", x, out.Verdict)
	}
	o.At, o.DNS, o.DNSHost = at.Add(2*time.Second), DNSNoPTR, ""
	_, out = Observe(s, o)
	if firingDetail(out, SignalUnverifiedBotClaim) != "" || out.Verdict.Classification != ClassCrawler {
		t.Fatalf("third hit: %+v %+v", out.Firings, out.Verdict)
	}
}

func firingDetail(out Outcome, name string) string {
	for _, f := range out.Firings {
		if f.Name == name {
			return f.Detail
		}
	}
	return ""
}

func TestSetRangesSwapsAtomically(t *testing.T) {
	t.Cleanup(func() { SetRanges(nil) })
	google := Agent{Name: "Googlebot"}
	addr := netip.MustParseAddr("203.0.113.7")
	if !UnverifiedClaim(google, addr) {
		t.Fatal("outside the embedded ranges")
	}
	lists := EmbeddedRanges()
	lists = append(lists, RangeList{Name: "googlebot", Operator: "Google", Agents: []string{"Googlebot"},
		Prefixes: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}, AsOf: time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC), Fetched: true})
	SetRanges(NewRangeSet(lists))
	if UnverifiedClaim(google, addr) || UnverifiedClaim(google, netip.MustParseAddr("66.249.66.1")) == false {
		t.Fatal("the fetched list replaces the embedded one for its agents")
	}
	c := CheckClaim(google, addr, DNSNotChecked, "")
	if d := c.Detail(); !strings.Contains(d, "googlebot list of 2026-11-27 (fetched)") {
		t.Fatal(d)
	}
	if n := len(Ranges().Lists()); n != len(EmbeddedRanges()) {
		t.Fatalf("%d lists in effect", n)
	}
	SetRanges(nil)
	if !UnverifiedClaim(google, addr) {
		t.Fatal("nil restores the embedded ranges")
	}
}

func TestCheckClaimDoesNotAllocate(t *testing.T) {
	a := LookupUA("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)")
	addr := netip.MustParseAddr("203.0.113.7")
	if n := testing.AllocsPerRun(100, func() {
		_ = CheckClaim(a, addr, DNSConfirmed, "crawl-203-0-113-7.googlebot.com")
		_ = UnverifiedClaim(a, addr)
		_ = DNSDomains(a)
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
