// Package crawler verifies crawlers the way their operators say: forward-confirmed reverse
// DNS for those who document it (Verifier), and the published address ranges fetched from
// the operators on a schedule (Refresher). detect weighs what they find and stays pure.
package crawler

import (
	"container/list"
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/internal/clientnet"
)

// Bounds of what one lookup reads of an answer: an attacker owns the PTR zone of its addresses.
const (
	maxPTRHosts     = 4   // PTR names considered
	maxForwardHosts = 2   // in-domain names resolved forward
	maxHostLen      = 253 // a DNS name's length
	failureTTL      = 30 * time.Second
)

// Verifier looks up forward-confirmed reverse DNS for claimed crawlers, within bounds: at
// most MaxInFlight lookups at once (more are not looked up: DNSBusy), each at most
// Timeout long, their answers cached (CacheSize entries, least recently used evicted)
// for the answer's TTL up to PositiveTTL or NegativeTTL, failures for 30 s. A request
// waits for its lookup at most Budget; the lookup goes on into the cache.
type Verifier struct {
	cfg    DNSConfig
	server string
	client *dns.Client
	now    func() time.Time
	slots  chan struct{}
	nets   map[netip.Prefix]int // lookups running, by the network of their address (clientnet.Of)

	mu    sync.Mutex
	cache map[cacheKey]*list.Element // of *entry
	lru   *list.List                 // front: most recently used

	lookups, busy, hits atomic.Int64
}

type cacheKey struct {
	addr     netip.Addr
	operator string // the operator's first domain: the answer depends on which domains count
}

type entry struct {
	key     cacheKey
	done    chan struct{} // closed when check and host are set
	check   detect.DNSCheck
	host    string
	expires time.Time
}

// NewVerifier returns a verifier asking cfg.Server (host:port), or the first nameserver
// of /etc/resolv.conf when it is empty. It returns nil, nil when cfg.Off.
func NewVerifier(cfg DNSConfig) (*Verifier, error) {
	if cfg.Off {
		return nil, nil
	}
	cfg.fill()
	server := cfg.Server
	if server == "" {
		cc, err := dns.ClientConfigFromFile("/etc/resolv.conf")
		if err != nil || len(cc.Servers) == 0 {
			return nil, errors.New("crawler-dns-server: no resolver in /etc/resolv.conf; set one, or --crawler-dns=false")
		}
		server = net.JoinHostPort(cc.Servers[0], cc.Port)
	}
	return &Verifier{
		cfg: cfg, server: server, now: time.Now,
		client: &dns.Client{Net: "udp", Timeout: cfg.Timeout, UDPSize: dns.DefaultMsgSize},
		slots:  make(chan struct{}, cfg.MaxInFlight),
		nets:   map[netip.Prefix]int{},
		cache:  map[cacheKey]*list.Element{}, lru: list.New(),
	}, nil
}

// Lookup is one request's wait for its verification.
type Lookup struct {
	e       *entry
	check   detect.DNSCheck // when e is nil
	started time.Time
}

// Start begins verifying the crawler a claims from addr, when its operator documents
// reverse DNS and addr could back it; nil otherwise (or on a nil Verifier). It never blocks.
func (v *Verifier) Start(a detect.Agent, addr netip.Addr) *Lookup {
	if v == nil {
		return nil
	}
	domains := detect.DNSDomains(a)
	addr = addr.Unmap().WithZone("")
	if domains == nil || !addr.IsValid() || addr.IsLoopback() || addr.IsPrivate() || addr.IsUnspecified() ||
		addr.IsLinkLocalUnicast() || addr.IsMulticast() {
		return nil
	}
	now := v.now()
	k := cacheKey{addr, domains[0]}
	v.mu.Lock()
	if el, ok := v.cache[k]; ok {
		e := el.Value.(*entry)
		select {
		case <-e.done:
			if now.Before(e.expires) {
				v.lru.MoveToFront(el)
				v.mu.Unlock()
				v.hits.Add(1)
				return &Lookup{e: e, started: time.Now()}
			}
			v.lru.Remove(el)
			delete(v.cache, k)
		default: // in flight: wait for the same answer
			v.mu.Unlock()
			v.hits.Add(1)
			return &Lookup{e: e, started: time.Now()}
		}
	}
	// One network (an IPv6 /48 whose reverse zone answers slowly) holds at most
	// lookupsPerNetwork of the slots, not all of them.
	n := clientnet.Of(addr)
	if v.nets[n] >= lookupsPerNetwork {
		v.mu.Unlock()
		v.busy.Add(1)
		return &Lookup{check: detect.DNSBusy}
	}
	select {
	case v.slots <- struct{}{}:
	default:
		v.mu.Unlock()
		v.busy.Add(1)
		return &Lookup{check: detect.DNSBusy}
	}
	v.nets[n]++
	e := &entry{key: k, done: make(chan struct{})}
	v.cache[k] = v.lru.PushFront(e)
	for v.lru.Len() > v.cfg.CacheSize {
		old := v.lru.Back()
		v.lru.Remove(old)
		delete(v.cache, old.Value.(*entry).key)
	}
	v.mu.Unlock()
	v.lookups.Add(1)
	go v.resolve(e, addr, domains)
	return &Lookup{e: e, started: time.Now()}
}

// Result waits for the lookup until budget has passed since it started: DNSPending then.
// A nil Lookup is DNSNotChecked.
func (l *Lookup) Result(budget time.Duration) (detect.DNSCheck, string) {
	if l == nil {
		return detect.DNSNotChecked, ""
	}
	if l.e == nil {
		return l.check, ""
	}
	select {
	case <-l.e.done:
		return l.e.check, l.e.host
	default:
	}
	wait := budget - time.Since(l.started)
	if wait <= 0 {
		return detect.DNSPending, ""
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-l.e.done:
		return l.e.check, l.e.host
	case <-t.C:
		return detect.DNSPending, ""
	}
}

// resolve runs one lookup and publishes it to whoever waits.
func (v *Verifier) resolve(e *entry, addr netip.Addr, domains []string) {
	defer func() {
		n := clientnet.Of(addr)
		v.mu.Lock()
		if v.nets[n]--; v.nets[n] <= 0 {
			delete(v.nets, n)
		}
		v.mu.Unlock()
		<-v.slots
	}()
	ctx, cancel := context.WithTimeout(context.Background(), v.cfg.Timeout)
	defer cancel()
	check, host, ttl := v.fcrdns(ctx, addr, domains)
	switch {
	case check == detect.DNSFailed:
		ttl = failureTTL
	case check == detect.DNSConfirmed:
		ttl = min(max(ttl, time.Minute), v.cfg.PositiveTTL)
	default:
		ttl = min(max(ttl, time.Minute), v.cfg.NegativeTTL)
	}
	if len(host) > maxHostLen {
		host = host[:maxHostLen]
	}
	v.mu.Lock()
	e.check, e.host, e.expires = check, host, v.now().Add(ttl)
	v.mu.Unlock()
	close(e.done)
}

// fcrdns is the operators' procedure: the address's PTR names, those under the documented
// domains, and whether one of them resolves back to the address. ttl is the smallest TTL
// of the records that decided.
func (v *Verifier) fcrdns(ctx context.Context, addr netip.Addr, domains []string) (detect.DNSCheck, string, time.Duration) {
	rev, err := dns.ReverseAddr(addr.String())
	if err != nil {
		return detect.DNSFailed, "", 0
	}
	in, err := v.query(ctx, rev, dns.TypePTR)
	if err != nil {
		return detect.DNSFailed, "", 0
	}
	switch in.Rcode {
	case dns.RcodeSuccess:
	case dns.RcodeNameError:
		return detect.DNSNoPTR, "", negativeTTL(in)
	default:
		return detect.DNSFailed, "", 0
	}
	var hosts []string
	ttl := time.Duration(-1)
	for _, rr := range in.Answer {
		if p, ok := rr.(*dns.PTR); ok && len(hosts) < maxPTRHosts && strings.EqualFold(p.Hdr.Name, rev) {
			hosts = append(hosts, strings.ToLower(p.Ptr))
			ttl = minTTL(ttl, p.Hdr.Ttl)
		}
	}
	if len(hosts) == 0 {
		return detect.DNSNoPTR, "", negativeTTL(in)
	}
	var inDomain []string
	for _, h := range hosts {
		if detect.HostInDomains(h, domains) && len(inDomain) < maxForwardHosts {
			inDomain = append(inDomain, h)
		}
	}
	if len(inDomain) == 0 {
		return detect.DNSWrongDomain, strings.TrimSuffix(hosts[0], "."), ttl
	}
	qtype := dns.TypeA
	if addr.Is6() {
		qtype = dns.TypeAAAA
	}
	failed := false
	for _, h := range inDomain {
		fw, err := v.query(ctx, h, qtype)
		if err != nil || fw.Rcode != dns.RcodeSuccess && fw.Rcode != dns.RcodeNameError {
			failed = true
			continue
		}
		for _, rr := range fw.Answer {
			var ip net.IP
			switch r := rr.(type) {
			case *dns.A:
				ip = r.A
			case *dns.AAAA:
				ip = r.AAAA
			default:
				continue
			}
			if got, ok := netip.AddrFromSlice(ip); ok && got.Unmap() == addr {
				return detect.DNSConfirmed, strings.TrimSuffix(h, "."), minTTL(ttl, rr.Header().Ttl)
			}
		}
	}
	if failed {
		return detect.DNSFailed, strings.TrimSuffix(inDomain[0], "."), 0
	}
	return detect.DNSForwardMismatch, strings.TrimSuffix(inDomain[0], "."), ttl
}

func (v *Verifier) query(ctx context.Context, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.RecursionDesired = true
	in, _, err := v.client.ExchangeContext(ctx, m, v.server)
	if err != nil {
		return nil, err
	}
	if in.Id != m.Id {
		return nil, errors.New("dns: answer to another question")
	}
	return in, nil
}

func minTTL(cur time.Duration, ttl uint32) time.Duration {
	d := time.Duration(ttl) * time.Second
	if cur < 0 || d < cur {
		return d
	}
	return cur
}

// negativeTTL is how long a "no such name" may be cached: the SOA's minimum (RFC 2308).
func negativeTTL(m *dns.Msg) time.Duration {
	for _, rr := range m.Ns {
		if soa, ok := rr.(*dns.SOA); ok {
			return time.Duration(min(soa.Minttl, soa.Hdr.Ttl)) * time.Second
		}
	}
	return 0
}

// DNSStats are the verifier's counters since it started, for /metrics.
type DNSStats struct {
	Lookups, Busy, CacheHits int64
	Cached                   int
}

// Stats returns the counters.
func (v *Verifier) Stats() DNSStats {
	if v == nil {
		return DNSStats{}
	}
	v.mu.Lock()
	n := v.lru.Len()
	v.mu.Unlock()
	return DNSStats{Lookups: v.lookups.Load(), Busy: v.busy.Load(), CacheHits: v.hits.Load(), Cached: n}
}

// lookupsPerNetwork is how many lookups the addresses of one network (clientnet.Of) may have
// running at once: enough for a crawler fetching from many addresses of its /24 at once.
const lookupsPerNetwork = 4
