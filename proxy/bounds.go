package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The proxy's bounds in time: toward the visitor, a deadline for each read of its
// request and each write of the answer, set before each (visitorWriter, visitorBody,
// tunnelConn); toward the upstream, the transport's timeouts and a watchdog that ends
// an exchange no byte has moved in for UpstreamTimeout (waiting for one of the
// UpstreamMaxConns connections included). A long download or stream lives as long as
// it moves; one that stalls, in either direction, ends.

// errUpstreamTimeout is the cause of an exchange the watchdog ended.
var errUpstreamTimeout = errors.New("no progress from the upstream within upstream-timeout")

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// newTransport is the proxy's only way to the upstream: a bounded number of connections,
// each step timed.
func newTransport(cfg Config) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: cfg.UpstreamTimeout, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = cfg.UpstreamTimeout
	tr.ResponseHeaderTimeout = cfg.UpstreamTimeout
	tr.MaxConnsPerHost = cfg.UpstreamMaxConns
	tr.MaxIdleConns = cfg.UpstreamMaxConns
	tr.MaxIdleConnsPerHost = cfg.UpstreamMaxConns // one application behind: keep its connections
	tr.IdleConnTimeout = 90 * time.Second
	tr.DisableCompression = true // a proxy passes bodies as they come
	return tr
}

// watchdog cancels an exchange in which nothing moved for d. Progress is one atomic
// store; the timer re-arms itself for what remains.
type watchdog struct {
	d       time.Duration
	last    atomic.Int64 // unix nanoseconds of the last progress
	stopped atomic.Bool
	t       *time.Timer
	cancel  context.CancelCauseFunc
}

func newWatchdog(d time.Duration, cancel context.CancelCauseFunc) *watchdog {
	w := &watchdog{d: d, cancel: cancel}
	w.last.Store(time.Now().UnixNano())
	w.t = time.AfterFunc(d, w.fire)
	return w
}

func (w *watchdog) fire() {
	if w.stopped.Load() {
		return
	}
	if idle := time.Since(time.Unix(0, w.last.Load())); idle < w.d {
		w.t.Reset(w.d - idle)
		return
	}
	w.cancel(errUpstreamTimeout)
}

func (w *watchdog) progress() { w.last.Store(time.Now().UnixNano()) }

func (w *watchdog) stop() {
	w.stopped.Store(true)
	w.t.Stop()
}

// upstreamBody is the upstream's answer: each read that returns bytes is progress.
type upstreamBody struct {
	io.ReadCloser
	wd *watchdog
}

func (b *upstreamBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.wd.progress()
	}
	return n, err
}

// visitorWriter is the ResponseWriter the reverse proxy writes the answer to: each
// write, flush and informational header has WriteTimeout to leave, and a tunnel
// (Hijack) gets a connection that times its reads and writes the same way.
type visitorWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	read  time.Duration
	write time.Duration
	wd    *watchdog

	mu   sync.Mutex
	done bool // handler returned or connection taken over: the deadlines are no longer ours to set

	bodyTimedOut atomic.Bool // the visitor sent no byte of its body within ReadTimeout
}

func newVisitorWriter(w http.ResponseWriter, cfg Config, wd *watchdog) *visitorWriter {
	vw := &visitorWriter{ResponseWriter: w, rc: http.NewResponseController(w), read: cfg.ReadTimeout, write: cfg.WriteTimeout, wd: wd}
	// The listener's whole-request read deadline and whole-answer write deadline give way
	// to a deadline per read (visitorBody) and per write.
	_ = vw.rc.SetReadDeadline(time.Time{})
	_ = vw.rc.SetWriteDeadline(time.Time{})
	return vw
}

func (w *visitorWriter) armWrite() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.write)) }

// armRead sets the read deadline for the visitor's next bytes, unless the request is over:
// net/http then reads the connection itself and aborts that read with a deadline of its own.
func (w *visitorWriter) armRead() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return false
	}
	_ = w.rc.SetReadDeadline(time.Now().Add(w.read))
	return true
}

// finish runs as the handler returns: the answer's last bytes (net/http's final flush)
// and what net/http reads of an unfinished body to reuse the connection get a fresh
// deadline, and none is set from another goroutine from now on.
func (w *visitorWriter) finish() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
	now := time.Now()
	_ = w.rc.SetReadDeadline(now.Add(w.read))
	_ = w.rc.SetWriteDeadline(now.Add(w.write))
}

func (w *visitorWriter) WriteHeader(code int) {
	w.armWrite() // a 1xx leaves at once
	w.ResponseWriter.WriteHeader(code)
}

func (w *visitorWriter) Write(p []byte) (int, error) {
	w.armWrite()
	n, err := w.ResponseWriter.Write(p)
	if n > 0 {
		w.wd.progress()
	}
	return n, err
}

func (w *visitorWriter) FlushError() error {
	w.armWrite()
	return w.rc.Flush()
}

func (w *visitorWriter) Flush() { _ = w.FlushError() }

// Hijack hands a protocol switch (WebSocket) a connection bounded like the rest.
func (w *visitorWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
	c, brw, err := w.rc.Hijack()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	_ = c.SetWriteDeadline(now.Add(w.write)) // the 101's headers go through brw, straight to c
	_ = c.SetReadDeadline(now.Add(w.read))
	return &tunnelConn{Conn: c, read: w.read, write: w.write}, brw, nil
}

func (w *visitorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// visitorBody is a proxied request's body: the visitor has ReadTimeout for each read.
type visitorBody struct {
	io.ReadCloser
	vw  *visitorWriter
	end bool
}

func (b *visitorBody) Read(p []byte) (int, error) {
	if b.end || !b.vw.armRead() {
		return b.ReadCloser.Read(p)
	}
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.vw.wd.progress()
	}
	if err != nil {
		b.end = true // at its end net/http starts reading the connection itself: hands off
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			b.vw.bodyTimedOut.Store(true) // not a context cause: net/http cancels the request's context first
		}
	}
	return n, err
}

// tunnelConn is a visitor's connection after a protocol switch: each write has the
// write timeout, and the tunnel is closed once no byte moved either way for the read
// timeout (as nginx's proxy_read_timeout ends a quiet WebSocket).
type tunnelConn struct {
	net.Conn
	read, write time.Duration
}

func (c *tunnelConn) Read(p []byte) (int, error) {
	_ = c.Conn.SetReadDeadline(time.Now().Add(c.read))
	return c.Conn.Read(p)
}

func (c *tunnelConn) Write(p []byte) (int, error) {
	now := time.Now()
	_ = c.Conn.SetWriteDeadline(now.Add(c.write))
	n, err := c.Conn.Write(p)
	if n > 0 {
		_ = c.Conn.SetReadDeadline(time.Now().Add(c.read)) // traffic the other way keeps it open too
	}
	return n, err
}

// CloseWrite passes a half-close on, as the reverse proxy asks when one side ends.
func (c *tunnelConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
