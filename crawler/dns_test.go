package crawler

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/crawler/crawlertest"
	"github.com/flytrap/flytrap/detect"
)

var (
	googlebot = detect.LookupUA("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)")
	yandexbot = detect.LookupUA("Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)")
)

func verify(t *testing.T, v *Verifier, a detect.Agent, addr string) (detect.DNSCheck, string) {
	t.Helper()
	return v.Start(a, netip.MustParseAddr(addr)).Result(time.Minute) // long enough: the answer, not the budget
}

func TestFCrDNS(t *testing.T) {
	z := crawlertest.Start(t)
	server := z.Addr
	z.PTR("203.0.113.7", "crawl-203-0-113-7.googlebot.com")
	z.Host("crawl-203-0-113-7.googlebot.com", "203.0.113.7")
	z.PTR("2001:db8::7", "crawl-2001-db8--7.googlebot.com")
	z.Host("crawl-2001-db8--7.googlebot.com", "2001:db8::7")
	z.PTR("203.0.113.8", "crawl-203-0-113-8.googlebot.com.evil.example")
	z.Host("crawl-203-0-113-8.googlebot.com.evil.example", "203.0.113.8")
	z.PTR("203.0.113.9", "crawl-203-0-113-9.googlebot.com") // someone else's googlebot.com name
	z.Host("crawl-203-0-113-9.googlebot.com", "66.249.66.1")
	z.PTR("198.51.100.4", "spider-198-51-100-4.yandex.com")
	z.Host("spider-198-51-100-4.yandex.com", "198.51.100.4")
	z.PTR("198.51.100.5", "mail.example.net", "spider-198-51-100-5.yandex.ru") // the second name is the operator's
	z.Host("spider-198-51-100-5.yandex.ru", "198.51.100.5")

	v, err := NewVerifier(DNSConfig{Server: server})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		a     detect.Agent
		addr  string
		want  detect.DNSCheck
		host  string
		claim detect.ClaimResult
	}{
		{"genuine Googlebot", googlebot, "203.0.113.7", detect.DNSConfirmed, "crawl-203-0-113-7.googlebot.com", detect.ClaimVerified},
		{"genuine Googlebot over IPv6", googlebot, "2001:db8::7", detect.DNSConfirmed, "crawl-2001-db8--7.googlebot.com", detect.ClaimVerified},
		{"PTR in the wrong domain", googlebot, "203.0.113.8", detect.DNSWrongDomain, "crawl-203-0-113-8.googlebot.com.evil.example", detect.ClaimUnverified},
		{"forward mismatch", googlebot, "203.0.113.9", detect.DNSForwardMismatch, "crawl-203-0-113-9.googlebot.com", detect.ClaimUnverified},
		{"no PTR", googlebot, "203.0.113.10", detect.DNSNoPTR, "", detect.ClaimUnverified},
		{"genuine YandexBot (no published ranges)", yandexbot, "198.51.100.4", detect.DNSConfirmed, "spider-198-51-100-4.yandex.com", detect.ClaimVerified},
		{"the operator's name among others", yandexbot, "198.51.100.5", detect.DNSConfirmed, "spider-198-51-100-5.yandex.ru", detect.ClaimVerified},
		{"YandexBot claimed from a Googlebot host", yandexbot, "203.0.113.7", detect.DNSWrongDomain, "crawl-203-0-113-7.googlebot.com", detect.ClaimUnverified},
	} {
		t.Run(c.name, func(t *testing.T) {
			check, host := verify(t, v, c.a, c.addr)
			if check != c.want || host != c.host {
				t.Fatalf("%v %q, want %v %q", check, host, c.want, c.host)
			}
			claim := detect.CheckClaim(c.a, netip.MustParseAddr(c.addr), check, host)
			if claim.Result != c.claim {
				t.Fatalf("claim %d: %s", claim.Result, claim.Detail())
			}
		})
	}
	if v.Start(googlebot, netip.MustParseAddr("127.0.0.1")) != nil || v.Start(detect.LookupUA("curl/8.5"), netip.MustParseAddr("203.0.113.7")) != nil {
		t.Error("a loopback address, or an agent whose operator documents no DNS, is not looked up")
	}

	// Answers are cached: asking again sends no query.
	before := z.Queries()
	if check, _ := verify(t, v, googlebot, "203.0.113.7"); check != detect.DNSConfirmed {
		t.Fatal(check)
	}
	if check, _ := verify(t, v, googlebot, "203.0.113.10"); check != detect.DNSNoPTR {
		t.Fatal(check)
	}
	if n := z.Queries() - before; n != 0 {
		t.Errorf("%d queries for cached answers", n)
	}
	if st := v.Stats(); st.Cached != 8 || st.Lookups != 8 {
		t.Errorf("%+v", st)
	}
}

// TestFCrDNSBudget: a resolver that does not answer costs a request its budget, no more;
// the lookup goes on, and the next request from the address finds its answer.
func TestFCrDNSBudget(t *testing.T) {
	z := crawlertest.Start(t)
	server := z.Addr
	z.Slow("203.0.113.7")
	z.PTR("203.0.113.7", "crawl-203-0-113-7.googlebot.com")
	z.Host("crawl-203-0-113-7.googlebot.com", "203.0.113.7")
	v, err := NewVerifier(DNSConfig{Server: server, Budget: 20 * time.Millisecond, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	l := v.Start(googlebot, netip.MustParseAddr("203.0.113.7"))
	if check, _ := l.Result(20 * time.Millisecond); check != detect.DNSPending {
		t.Fatalf("%v before the resolver answered", check)
	}
	// Without an answer the ranges decide: outside Google's, an unverified claim saying why.
	c := detect.CheckClaim(googlebot, netip.MustParseAddr("203.0.113.7"), detect.DNSPending, "")
	if c.Result != detect.ClaimUnverified || !strings.Contains(c.Detail(), "not answered within the budget") {
		t.Fatal(c.Detail())
	}
	// A second request meanwhile shares the lookup in flight.
	l2 := v.Start(googlebot, netip.MustParseAddr("203.0.113.7"))
	z.Release()
	if check, host := l2.Result(time.Minute); check != detect.DNSConfirmed || host != "crawl-203-0-113-7.googlebot.com" {
		t.Fatalf("%v %q", check, host)
	}
	if st := v.Stats(); st.Lookups != 1 || st.CacheHits != 1 {
		t.Errorf("%+v", st)
	}
}

// TestFCrDNSTimeout: a resolver that never answers makes a failure, cached briefly, which
// concludes nothing (the ranges decide).
func TestFCrDNSTimeout(t *testing.T) {
	z := crawlertest.Start(t)
	server := z.Addr
	z.Slow("198.51.100.4")
	v, err := NewVerifier(DNSConfig{Server: server, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	check, _ := verify(t, v, yandexbot, "198.51.100.4")
	if check != detect.DNSFailed {
		t.Fatal(check)
	}
	if c := detect.CheckClaim(yandexbot, netip.MustParseAddr("198.51.100.4"), check, ""); c.Result != detect.ClaimNone {
		t.Fatalf("a failed lookup concluded %d", c.Result)
	}
}

// TestFCrDNSBounds: lookups in flight are capped (beyond: DNSBusy, nothing sent), and the
// cache holds at most CacheSize answers, the least recently used evicted.
func TestFCrDNSBounds(t *testing.T) {
	z := crawlertest.Start(t)
	server := z.Addr
	for i := range 4 {
		z.Slow(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}).String())
	}
	v, err := NewVerifier(DNSConfig{Server: server, MaxInFlight: 2, CacheSize: 3, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var held []*Lookup
	for i := range 2 {
		held = append(held, v.Start(googlebot, netip.AddrFrom4([4]byte{198, 51, 100, byte(i)})))
	}
	if check, _ := v.Start(googlebot, netip.MustParseAddr("198.51.100.2")).Result(time.Minute); check != detect.DNSBusy {
		t.Fatalf("a third lookup at once: %v", check)
	}
	z.Release()
	for _, l := range held {
		if check, _ := l.Result(time.Minute); check != detect.DNSNoPTR {
			t.Fatal(check)
		}
	}
	for i := 2; i < 20; i++ {
		verify(t, v, googlebot, netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}).String())
	}
	if st := v.Stats(); st.Cached != 3 || st.Busy != 1 {
		t.Fatalf("%+v", st)
	}
	before := z.Queries()
	verify(t, v, googlebot, "198.51.100.19") // the most recent: cached
	if z.Queries() != before {
		t.Error("the most recent answer was evicted")
	}
	verify(t, v, googlebot, "198.51.100.0") // the oldest: evicted, asked again
	if z.Queries() == before {
		t.Error("the oldest answer was kept past the cache's bound")
	}
}

// One network's slow reverse zone holds at most lookupsPerNetwork lookups (an IPv6 /48 or
// IPv4 /24): the next address of it is busy at once, and another network's still resolves.
func TestFCrDNSPerNetwork(t *testing.T) {
	z := crawlertest.Start(t)
	for i := range lookupsPerNetwork + 1 {
		z.Slow(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}).String())
	}
	v, err := NewVerifier(DNSConfig{Server: z.Addr, MaxInFlight: 64, CacheSize: 100, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var held []*Lookup
	for i := range lookupsPerNetwork {
		held = append(held, v.Start(googlebot, netip.AddrFrom4([4]byte{198, 51, 100, byte(i)})))
	}
	next := netip.AddrFrom4([4]byte{198, 51, 100, byte(lookupsPerNetwork)})
	if check, _ := v.Start(googlebot, next).Result(time.Minute); check != detect.DNSBusy {
		t.Fatalf("one more lookup of the same /24: %v", check)
	}
	if check, _ := v.Start(googlebot, netip.MustParseAddr("203.0.113.5")).Result(time.Minute); check == detect.DNSBusy {
		t.Fatal("another network's lookup was refused")
	}
	z.Release()
	for _, l := range held {
		l.Result(time.Minute)
	}
}
