package httpx

import (
	"context"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"github.com/flytrap/flytrap/trap"
)

// ConnGate caps the API connections that have not authenticated: a connection
// counts from its accept until one of its requests authenticates, it is taken
// over (event stream, WebSocket: they have their own limits), or it closes.
// Over the cap a new connection is closed as soon as it is accepted.
type ConnGate struct {
	max int
	log *slog.Logger

	mu     sync.Mutex
	unauth int
	conns  map[net.Conn]*gatedConn

	refused  atomic.Int64
	lastWarn atomic.Int64 // unix seconds of the last warning, so a flood logs once a minute
}

// gatedConn is one connection's standing; gate.mu guards it.
type gatedConn struct {
	tracked bool // still counted by the gate
	authed  bool
}

type ctxKeyGatedConn struct{}

// NewConnGate lets max connections be unauthenticated at once; log hears of refusals.
func NewConnGate(max int, log *slog.Logger) *ConnGate {
	return &ConnGate{max: max, log: log, conns: map[net.Conn]*gatedConn{}}
}

// ConnContext runs for every accepted connection before the server reads from it.
func (g *ConnGate) ConnContext(ctx context.Context, c net.Conn) context.Context {
	g.mu.Lock()
	if g.unauth >= g.max {
		g.mu.Unlock()
		_ = c.Close() // the server's first read fails, and it forgets the connection
		n := g.refused.Add(1)
		if now := time.Now().Unix(); g.lastWarn.Load() < now-60 {
			g.lastWarn.Store(now)
			g.log.Warn("refusing API connections: too many have not authenticated", "max_unauthenticated_conns", g.max, "refused_total", n)
		}
		return ctx
	}
	gc := &gatedConn{tracked: true}
	g.unauth++
	g.conns[c] = gc
	g.mu.Unlock()
	return context.WithValue(ctx, ctxKeyGatedConn{}, gc)
}

// ConnState forgets a connection that closed or was taken over.
func (g *ConnGate) ConnState(c net.Conn, st http.ConnState) {
	if st != http.StateClosed && st != http.StateHijacked {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	gc, ok := g.conns[c]
	if !ok {
		return
	}
	delete(g.conns, c)
	gc.tracked = false
	if !gc.authed {
		g.unauth--
	}
}

// Authenticated marks the connection of a request that authenticated: it no longer counts.
func (g *ConnGate) Authenticated(ctx context.Context) {
	gc, _ := ctx.Value(ctxKeyGatedConn{}).(*gatedConn)
	if gc == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if gc.tracked && !gc.authed {
		gc.authed = true
		g.unauth--
	}
}

// Enter counts a connection taken over before it authenticated (a WebSocket upgraded
// without credentials, which signs in with its connection_init) until Leave; it reports
// false, counting nothing, at the cap.
func (g *ConnGate) Enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.unauth >= g.max {
		g.refused.Add(1)
		return false
	}
	g.unauth++
	return true
}

// Leave ends what Enter counted.
func (g *ConnGate) Leave() {
	g.mu.Lock()
	g.unauth--
	g.mu.Unlock()
}

// Unauthenticated is how many API connections have not authenticated yet.
func (g *ConnGate) Unauthenticated() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.unauth
}

// AuthFailures limits failed authentications per client address: a token bucket
// that only 401s drain. An address whose bucket is empty gets 429 before its
// token is looked at, so guessing keys or replaying stolen JWTs is slow and
// cheap for us. IPv6 addresses share a bucket per /64, what one host is given.
type AuthFailures struct {
	rate    rate.Limit
	burst   int
	buckets *lru.Cache[netip.Prefix, *rate.Limiter]
	Now     func() time.Time // the clock, replaced by tests
}

// NewAuthFailures lets an address fail perSecond times a second, burst at once.
func NewAuthFailures(perSecond float64, burst int) *AuthFailures {
	cache, _ := lru.New[netip.Prefix, *rate.Limiter](100_000) // only fails for a size < 1
	return &AuthFailures{rate: rate.Limit(perSecond), burst: burst, buckets: cache, Now: time.Now}
}

// clientPrefix is the bucket of a request's peer (RemoteAddr: the API listener trusts no forwarding header).
func clientPrefix(r *http.Request) (netip.Prefix, bool) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Prefix{}, false
	}
	return trap.ClientPrefix(ap.Addr()), true
}

// Blocked reports whether r's address has failed too often; if so it sets Retry-After.
func (f *AuthFailures) Blocked(w http.ResponseWriter, r *http.Request) bool {
	p, ok := clientPrefix(r)
	if !ok {
		return false
	}
	lim, ok := f.buckets.Get(p)
	if !ok {
		return false
	}
	tokens := lim.TokensAt(f.Now())
	if tokens >= 1 {
		return false
	}
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil((1-tokens)/float64(f.rate))))))
	return true
}

// FailedFrom records a failed authentication from a remote address (host:port).
func (f *AuthFailures) FailedFrom(remoteAddr string) { f.Failed(&http.Request{RemoteAddr: remoteAddr}) }

// Failed records a failed authentication from r's address.
func (f *AuthFailures) Failed(r *http.Request) {
	p, ok := clientPrefix(r)
	if !ok {
		return
	}
	lim, ok := f.buckets.Get(p)
	if !ok {
		lim = rate.NewLimiter(f.rate, f.burst)
		if prev, found, _ := f.buckets.PeekOrAdd(p, lim); found {
			lim = prev
		}
	}
	lim.AllowN(f.Now(), 1)
}
