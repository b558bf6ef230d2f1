package traptls

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/http2"

	"github.com/flytrap/flytrap/fingerprint"
	"github.com/flytrap/flytrap/internal/gather"
)

// The trap listener's TLS is terminated here, not by net/http: net/http reads a *tls.Conn
// itself, so the decrypted bytes — the HTTP/1 header order, the HTTP/2 SETTINGS and
// first HEADERS — would never be seen. Listen hands net/http a Conn instead, which reads
// through the TLS connection and lets its fingerprints (fingerprint.Conn) see the bytes
// go by. net/http sets Request.TLS from its ConnectionState; HTTP/1.1 it serves as over
// any connection; an HTTP/2 client's preface reaches the handler as a "PRI *" request,
// which ServeH2 takes over and serves with golang.org/x/net/http2 (docs/decisions.md,
// "Client fingerprints").

// HandshakeTimeout bounds a client's TLS handshake.
const HandshakeTimeout = 10 * time.Second

// Listen is ln (whose connections carry fingerprints: fingerprint.Holder) over TLS with
// config: each connection's JA4 is taken from its ClientHello, its HTTP fingerprints from
// the bytes it sends. Serve it with http.Server.Serve (not ServeTLS) and a handler
// wrapped in ServeH2.
func Listen(ln net.Listener, config *tls.Config) net.Listener {
	c := config.Clone()
	next := c.GetConfigForClient
	c.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		if fc, ok := h.Conn.(fingerprint.Holder); ok {
			fc.Fingerprints().JA4 = fingerprint.JA4(h)
		}
		if next != nil {
			return next(h)
		}
		return nil, nil
	}
	return &listener{Listener: ln, config: c}
}

type listener struct {
	net.Listener
	config *tls.Config
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	var fp *fingerprint.Conn
	if fc, ok := c.(fingerprint.Holder); ok {
		fp = fc.Fingerprints()
		fp.Sealed() // the bytes under TLS are not the client's request
	} else {
		fp = &fingerprint.Conn{}
	}
	return &Conn{Conn: tls.Server(c, l.config), fp: fp}, nil
}

// Conn is a trap listener's TLS connection as net/http serves it.
type Conn struct {
	*tls.Conn
	fp   *fingerprint.Conn
	held gather.Writes // what net/http wrote while a handler holds the connection (see Hold)
}

// Hold gathers every write of net/http until Release, above TLS: a response that would
// leave as its 4 KB buffer and then the rest of its body becomes one TLS record and one
// write(2) instead of two of each. Only the goroutine serving the connection's HTTP/1
// request may call it (net/http writes the response from there; what TLS itself writes
// from a reading goroutine, a KeyUpdate's answer, goes under this layer, not through it).
func (c *Conn) Hold() { c.held.Hold() }

// Release sends what was gathered since Hold in one write; a failed write closes the
// connection, as net/http closes one whose write failed.
func (c *Conn) Release() error { return c.held.Release(c.Conn) }

// Write writes through TLS, or gathers while the connection is held.
func (c *Conn) Write(p []byte) (int, error) {
	if c.held.Gather(p) {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// Read reads the client's decrypted bytes, which the fingerprints see go by unchanged.
func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.fp.Feed(p[:n])
	return n, err
}

// ConnectionState completes the handshake (bounded by HandshakeTimeout) before it answers:
// net/http asks for it first, to set Request.TLS.
func (c *Conn) ConnectionState() tls.ConnectionState {
	if !c.Conn.ConnectionState().HandshakeComplete {
		_ = c.Conn.SetDeadline(time.Now().Add(HandshakeTimeout))
		if err := c.Conn.Handshake(); err == nil {
			_ = c.Conn.SetDeadline(time.Time{})
		} // else the next read fails with the handshake's error, and net/http closes
	}
	return c.Conn.ConnectionState()
}

// Fingerprints is what the connection proved of its client.
func (c *Conn) Fingerprints() *fingerprint.Conn { return c.fp }

// NetConn is the connection under TLS.
func (c *Conn) NetConn() net.Conn { return c.Conn.NetConn() }

// CloseWrite half-closes, as net/http does on a *tls.Conn.
func (c *Conn) CloseWrite() error { return c.Conn.CloseWrite() }

// ServeH2 serves next, taking over the connections whose client speaks HTTP/2 (its
// preface arrives as a "PRI * HTTP/2.0" request) and serving them with h2 on srv's
// settings; h2 must have been configured on srv (http2.ConfigureServer), which lets
// srv.Shutdown close them gracefully.
func ServeH2(srv *http.Server, h2 *http2.Server, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "PRI" || r.URL.Path != "*" || r.Proto != "HTTP/2.0" || r.TLS == nil || r.TLS.NegotiatedProtocol != "h2" {
			next.ServeHTTP(w, r)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		tc, ok := conn.(*Conn)
		if !ok {
			conn.Close()
			return
		}
		// The rest of the preface; what net/http read past it is in brw.
		var rest [6]byte
		if _, err := io.ReadFull(brw, rest[:]); err != nil || string(rest[:]) != "SM\r\n\r\n" {
			conn.Close()
			return
		}
		_ = conn.SetDeadline(time.Time{}) // net/http's request deadlines; h2 keeps its own
		h2.ServeConn(&h2Conn{Conn: tc, r: brw.Reader}, &http2.ServeConnOpts{
			Context:          context.WithoutCancel(r.Context()),
			BaseConfig:       srv,
			Handler:          next,
			SawClientPreface: true,
		})
	})
}

// h2Conn is a connection taken over for HTTP/2: what net/http had buffered is read first.
type h2Conn struct {
	*Conn
	r *bufio.Reader
}

func (c *h2Conn) Read(p []byte) (int, error) {
	if c.r.Buffered() > 0 {
		return c.r.Read(p)
	}
	return c.Conn.Read(p)
}

// NetConn is the TLS connection's own, for ConnState's unwrapping (trap.ConnState).
func (c *h2Conn) NetConn() net.Conn { return c.Conn }
