package trap

import (
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// LimitListener caps the trap listener's open connections at max, so that visitors
// cannot take every file descriptor of the process (and with them the database's and
// the API's). A connection counts from its accept until it is closed, a proxied
// WebSocket's included. At the cap, a new connection takes the place of an idle
// keep-alive one, which is closed, as nginx reuses its idle connections when it runs
// short; with none idle it is closed at once. Slow connections free their place at the
// listener's timeouts. The http.Server must have ConnState set to ConnState, which
// tells the limiter which connections are idle.
func LimitListener(ln net.Listener, max int, log *slog.Logger) *ConnLimiter {
	return &ConnLimiter{Listener: ln, max: max, log: log, idle: map[*limitedConn]struct{}{}}
}

// ConnLimiter is a listener with a cap on open connections (LimitListener).
type ConnLimiter struct {
	net.Listener
	max int
	log *slog.Logger

	mu   sync.Mutex
	open int
	idle map[*limitedConn]struct{}

	refused  atomic.Int64
	evicted  atomic.Int64
	lastWarn atomic.Int64 // unix seconds of the last warning: a flood logs once a minute
}

// Open is the number of connections open now.
func (l *ConnLimiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Refused is the number of connections closed on accept because the cap was reached.
func (l *ConnLimiter) Refused() int64 { return l.refused.Load() }

// Evicted is the number of idle connections closed to make room for a new one.
func (l *ConnLimiter) Evicted() int64 { return l.evicted.Load() }

func (l *ConnLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		var victim *limitedConn
		if l.open >= l.max {
			for v := range l.idle { // any idle one: they all wait for a request that may never come
				victim = v
				break
			}
			if victim == nil {
				l.mu.Unlock()
				_ = c.Close()
				l.warn(l.refused.Add(1))
				continue
			}
			l.forget(victim)
		}
		l.open++
		l.mu.Unlock()
		if victim != nil {
			l.evicted.Add(1)
			_ = victim.Conn.Close() // its server goroutine sees the read fail and closes it again: counted once
		}
		return &limitedConn{Conn: c, l: l}, nil
	}
}

func (l *ConnLimiter) warn(refused int64) {
	if now := time.Now().Unix(); l.lastWarn.Load() < now-60 {
		l.lastWarn.Store(now)
		l.log.Warn("refusing trap listener connections: too many open", "trap_max_conns", l.max, "refused_total", refused)
	}
}

// forget stops counting c; l.mu is held.
func (l *ConnLimiter) forget(c *limitedConn) {
	if c.gone {
		return
	}
	c.gone = true
	l.open--
	delete(l.idle, c)
}

type limitedConn struct {
	net.Conn
	l    *ConnLimiter
	gone bool // no longer counted (l.mu)
}

func (c *limitedConn) Close() error {
	c.l.mu.Lock()
	c.l.forget(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// CloseWrite lets net/http half-close, as it would on the bare TCP connection.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *limitedConn) state(st http.ConnState) {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.gone {
		return
	}
	if st == http.StateIdle {
		c.l.idle[c] = struct{}{}
	} else {
		delete(c.l.idle, c)
	}
}

// ConnState is the trap listener's http.Server.ConnState: it tells a LimitListener
// which of its connections wait idle between two requests.
// Over HTTPS, c is the TLS connection (traptls.Conn), or the HTTP/2 connection over it:
// ours is found under them.
func ConnState(c net.Conn, st http.ConnState) {
	for range 6 { // HTTP/2 over TLS over nginx's over ours: 4 layers
		switch cc := c.(type) {
		case *limitedConn:
			cc.state(st)
			return
		case *nginxConn:
			c = cc.Conn
		case interface{ NetConn() net.Conn }: // *tls.Conn, traptls's
			c = cc.NetConn()
		default:
			return
		}
	}
}
