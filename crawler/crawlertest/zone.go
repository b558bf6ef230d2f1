// Package crawlertest is a DNS server for tests of crawler verification: a recursive
// resolver's answers from maps, on loopback, started by the test (github.com/miekg/dns).
package crawlertest

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"
)

// Zone answers PTR questions by reverse name and A/AAAA questions by host; any other name
// is NXDOMAIN (with an SOA, as a resolver's negative answer has). A name made slow waits
// until Release.
type Zone struct {
	Addr string // host:port of the server (UDP)

	mu       sync.Mutex
	ptr      map[string][]string
	addrs    map[string][]string
	slow     map[string]bool
	release  chan struct{}
	released bool
	queries  atomic.Int64
}

// Start serves a zone on 127.0.0.1 until the test ends.
func Start(t testing.TB) *Zone {
	t.Helper()
	z := &Zone{ptr: map[string][]string{}, addrs: map[string][]string{}, slow: map[string]bool{}, release: make(chan struct{})}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(z.serve)}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go srv.ActivateAndServe()
	<-started
	z.Addr = pc.LocalAddr().String()
	t.Cleanup(func() {
		z.Release()
		srv.Shutdown()
	})
	return z
}

// PTR sets the host names addr's reverse lookup answers.
func (z *Zone) PTR(addr string, hosts ...string) {
	rev, _ := dns.ReverseAddr(addr)
	z.mu.Lock()
	z.ptr[rev] = hosts
	z.mu.Unlock()
}

// Host sets the addresses host's forward lookups answer.
func (z *Zone) Host(host string, addrs ...string) {
	z.mu.Lock()
	z.addrs[strings.ToLower(dns.Fqdn(host))] = addrs
	z.mu.Unlock()
}

// Slow makes the reverse lookup of addr wait until Release.
func (z *Zone) Slow(addr string) {
	rev, _ := dns.ReverseAddr(addr)
	z.mu.Lock()
	z.slow[rev] = true
	z.mu.Unlock()
}

// Release lets the slow lookups answer (once; later ones answer at once).
func (z *Zone) Release() {
	z.mu.Lock()
	defer z.mu.Unlock()
	if !z.released {
		z.released = true
		close(z.release)
	}
}

// Queries counts the questions answered so far.
func (z *Zone) Queries() int64 { return z.queries.Load() }

func (z *Zone) serve(w dns.ResponseWriter, r *dns.Msg) {
	z.queries.Add(1)
	m := new(dns.Msg)
	m.SetReply(r)
	if len(r.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		w.WriteMsg(m)
		return
	}
	q := r.Question[0]
	name := strings.ToLower(q.Name)
	z.mu.Lock()
	slow, release := z.slow[name], z.release
	ptrs, addrs := z.ptr[name], z.addrs[name]
	z.mu.Unlock()
	if slow {
		<-release
	}
	switch {
	case q.Qtype == dns.TypePTR && ptrs != nil:
		for _, h := range ptrs {
			m.Answer = append(m.Answer, &dns.PTR{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypePTR, Class: dns.ClassINET, Ttl: 3600}, Ptr: dns.Fqdn(h)})
		}
	case (q.Qtype == dns.TypeA || q.Qtype == dns.TypeAAAA) && addrs != nil:
		for _, a := range addrs {
			ip := net.ParseIP(a)
			if q.Qtype == dns.TypeA && ip.To4() != nil {
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 300}, A: ip})
			}
			if q.Qtype == dns.TypeAAAA && ip.To4() == nil {
				m.Answer = append(m.Answer, &dns.AAAA{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: 300}, AAAA: ip})
			}
		}
	case ptrs == nil && addrs == nil:
		m.Rcode = dns.RcodeNameError
		m.Ns = []dns.RR{&dns.SOA{Hdr: dns.RR_Header{Name: "arpa.", Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 900},
			Ns: "ns.example.", Mbox: "h.example.", Serial: 1, Refresh: 1, Retry: 1, Expire: 1, Minttl: 600}}
	}
	w.WriteMsg(m)
}
