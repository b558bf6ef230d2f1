package crawler

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/flytrap/flytrap/settings"
)

// Config is crawler verification's part of the configuration.
type Config struct {
	DNS     DNSConfig
	Refresh RefreshConfig
}

// DNSConfig bounds the forward-confirmed reverse DNS lookups (Verifier).
type DNSConfig struct {
	Off         bool          // --crawler-dns=false: no lookups, the published ranges alone
	Server      string        // host:port of the recursive resolver asked; "": /etc/resolv.conf's first
	Timeout     time.Duration // one lookup, PTR and forward together
	Budget      time.Duration // how long a request waits for its lookup before it is recorded without it
	MaxInFlight int           // lookups at once; more are not looked up (DNSBusy)
	CacheSize   int           // cached answers (addresses × operators), least recently used evicted
	PositiveTTL time.Duration // the longest a confirmation is kept (the record's TTL when shorter, at least 1 min)
	NegativeTTL time.Duration // the longest a definite failure is kept (no PTR, wrong domain, mismatch)
}

// RefreshConfig is the refresh of the published range lists (Refresher).
type RefreshConfig struct {
	Interval   time.Duration     // between refreshes; 0: off (the embedded snapshot, or the last stored fetch)
	URLs       map[string]string // a list's URL instead of its operator's (tests, a mirror)
	Timeout    time.Duration     // one fetch
	MaxBytes   int64             // one document
	StaleAfter int               // a list not refreshed for this many intervals is stale
}

// Defaults.
const (
	DefaultDNSTimeout  = 2 * time.Second
	DefaultDNSBudget   = 100 * time.Millisecond
	DefaultInFlight    = 64
	DefaultCacheSize   = 10000
	DefaultPositiveTTL = time.Hour
	DefaultNegativeTTL = 10 * time.Minute
	DefaultInterval    = 24 * time.Hour
	DefaultFetchTime   = 30 * time.Second
	DefaultMaxBytes    = 1 << 20
	DefaultStaleAfter  = 3
)

// fill sets what is zero to its default (a Config made in code, as tests do).
func (c *DNSConfig) fill() {
	if c.Timeout <= 0 {
		c.Timeout = DefaultDNSTimeout
	}
	if c.Budget < 0 {
		c.Budget = 0
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultInFlight
	}
	if c.CacheSize <= 0 {
		c.CacheSize = DefaultCacheSize
	}
	if c.PositiveTTL <= 0 {
		c.PositiveTTL = DefaultPositiveTTL
	}
	if c.NegativeTTL <= 0 {
		c.NegativeTTL = DefaultNegativeTTL
	}
}

func (c *RefreshConfig) fill() {
	if c.Timeout <= 0 {
		c.Timeout = DefaultFetchTime
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.StaleAfter <= 0 {
		c.StaleAfter = DefaultStaleAfter
	}
}

// Declare declares crawler verification's settings over c.
func (c *Config) Declare(s *settings.Set) {
	d := &c.DNS
	s.Func("crawler-dns", "true", "verify crawlers whose operators document it (Googlebot, bingbot, Applebot, YandexBot, Baiduspider, Amazonbot) by forward-confirmed reverse DNS; false: their published ranges alone", func(v string) error {
		switch v {
		case "true", "1", "on":
			d.Off = false
		case "false", "0", "off":
			d.Off = true
		default:
			return fmt.Errorf("crawler-dns: %q is not true or false", v)
		}
		return nil
	}).Doc("Verify the crawlers whose operators document it (Googlebot and Google's other crawlers, bingbot, Applebot, YandexBot, Baiduspider, Amazonbot) by forward-confirmed reverse DNS; `false`: by their published ranges alone. See [detection](docs/detection.md#verified-crawler-identities)")
	s.String(&d.Server, "crawler-dns-server", "", "host:port of the recursive DNS resolver crawler verification asks; empty: the first nameserver of /etc/resolv.conf").
		DefaultDoc("`/etc/resolv.conf`'s first").
		Check(func() error {
			if d.Server == "" {
				return nil
			}
			if _, _, err := net.SplitHostPort(d.Server); err != nil {
				return fmt.Errorf("crawler-dns-server: %q is not host:port", d.Server)
			}
			return nil
		})
	s.Duration(&d.Timeout, "crawler-dns-timeout", DefaultDNSTimeout, "how long one crawler verification (PTR and forward lookups) may take (100ms to 10s)").
		Between(100*time.Millisecond, 10*time.Second)
	s.Duration(&d.Budget, "crawler-dns-budget", DefaultDNSBudget, "how long a trap request waits for its crawler verification before it is recorded without it (the lookup goes on into the cache; 0 to 1s)").
		Between(0, time.Second)
	s.Int(&d.MaxInFlight, "crawler-dns-concurrency", DefaultInFlight, "crawler verifications in flight at once; requests beyond it are recorded unverified by DNS (1 to 1024)").
		Between(1, 1024)
	s.Int(&d.CacheSize, "crawler-dns-cache", DefaultCacheSize, "crawler verification answers cached (address and operator; least recently used evicted; 16 to 1000000)").
		Between(16, 1_000_000)
	s.Duration(&d.PositiveTTL, "crawler-dns-ttl", DefaultPositiveTTL, "longest a confirmed crawler address is cached (the record's TTL when shorter; 1m to 24h)").
		Between(time.Minute, 24*time.Hour)
	s.Duration(&d.NegativeTTL, "crawler-dns-negative-ttl", DefaultNegativeTTL, "longest a failed crawler verification (no PTR, wrong domain, forward mismatch) is cached (1m to 24h)").
		Between(time.Minute, 24*time.Hour)

	r := &c.Refresh
	r.Timeout, r.MaxBytes, r.StaleAfter = DefaultFetchTime, DefaultMaxBytes, DefaultStaleAfter
	s.Duration(&r.Interval, "crawler-ranges-refresh", DefaultInterval, "how often the crawler operators' published address lists are fetched again (0: never; the embedded snapshot or the last stored fetch serves)").
		Doc("How often the crawler operators' published address lists (Google, Bing, Apple, OpenAI, Perplexity) are fetched again, through the outbound guard (`--webhook-allow-private`/`--webhook-allow-cidrs` apply); `0`: never, the last stored fetch or the embedded snapshot serves. See [operations](docs/operations.md#crawler-verification)").
		Valid(func(v time.Duration) bool { return v == 0 || v >= time.Minute }, "must be 0 (off) or at least 1m")
	s.Func("crawler-ranges-url", "", "comma-separated LIST=URL pairs replacing an operator's list URL (a mirror, a test); lists: "+strings.Join(SourceNames(), ", "), func(v string) error {
		r.URLs = nil
		if v == "" {
			return nil
		}
		r.URLs = map[string]string{}
		for _, pair := range strings.Split(v, ",") {
			name, u, ok := strings.Cut(strings.TrimSpace(pair), "=")
			if !ok || SourceByName(name) == nil {
				return fmt.Errorf("crawler-ranges-url: %q is not LIST=URL with a list among %s", pair, strings.Join(SourceNames(), ", "))
			}
			pu, err := url.Parse(u)
			if err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" {
				return fmt.Errorf("crawler-ranges-url: %s: %q is not an http(s) URL", name, u)
			}
			r.URLs[name] = u
		}
		return nil
	}).Doc("Comma-separated `LIST=URL` pairs replacing an operator's list URL (a mirror, a test); the lists are in [operations](docs/operations.md#crawler-verification)").DefaultDoc("the operators'")
	s.Rule(func() error {
		if !d.Off && d.Budget >= d.Timeout {
			return errors.New("crawler-dns-budget must be shorter than crawler-dns-timeout")
		}
		return nil
	})
}
