package trap

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/fingerprint"
	"github.com/flytrap/flytrap/internal/gather"
)

// WrapListener makes the errors net/http answers on its own, before any handler runs
// (a malformed request, headers too large, an unknown transfer coding, an HTTP
// version it does not speak), look like the nginx the trap listener imitates. Go
// writes those in a style of its own ("400 Bad Request: malformed MIME header line",
// text/plain, no Date) that names the Go server to any scanner.
//
// net/http writes each of them straight to the connection in one Write, with a fixed
// header block no handler response has (it would carry Date and be in another order):
// the connection spots that block and sends nginx's page instead.
func WrapListener(ln net.Listener) net.Listener { return nginxListener{ln} }

type nginxListener struct{ net.Listener }

func (l nginxListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &nginxConn{Conn: c}, nil
}

type nginxConn struct {
	net.Conn
	held gather.Writes // what net/http wrote while a handler holds the connection (see Hold)
	fp   fingerprint.Conn
}

// Read lets the connection's fingerprints see its client's bytes go by (over TLS, the
// TLS connection above feeds them instead: traptls.Listen).
func (c *nginxConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.fp.FeedPlain(p[:n])
	return n, err
}

// Fingerprints is what the connection proved of its client (fingerprint.Holder).
func (c *nginxConn) Fingerprints() *fingerprint.Conn { return &c.fp }

// A response of more than net/http's 4 KB connection buffer leaves in two writes: the
// buffer (headers and the body's start), then the rest of the body. Each is a system
// call and a TCP segment, the largest share of the listener's CPU per request after the
// writer. While a handler holds the connection, its writes gather in one buffer and
// release sends them in one.
const wholeMinBody = 2048 // a body this size or smaller leaves with its headers in one write anyway

type ctxKeyConn struct{}

// ConnContext is the trap listener's http.Server.ConnContext: it hands the handler the
// connection WrapListener made, so a response can be written whole (see wholeConn).
// Over TLS (traptls.Conn) it hands it the connection's fingerprints alone: a response
// is written through TLS, not gathered under it.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if nc, ok := c.(*nginxConn); ok {
		return fingerprint.NewContext(context.WithValue(ctx, ctxKeyConn{}, gatherer(nc)), &nc.fp)
	}
	if g, ok := c.(gatherer); ok { // TLS (traptls.Conn): gathered above TLS, one record
		ctx = context.WithValue(ctx, ctxKeyConn{}, g)
	}
	if h, ok := c.(fingerprint.Holder); ok {
		return fingerprint.NewContext(ctx, h.Fingerprints())
	}
	return ctx
}

// gatherer is a connection that can gather a response's writes into one: ours
// (nginxConn), or the TLS one above it (traptls.Conn).
type gatherer interface {
	Hold()
	Release() error
}

// wholeConn is the connection of r if a body of n bytes would otherwise leave in more
// than one write, and the connection can gather it (it came through WrapListener).
func wholeConn(r *http.Request, n int) gatherer {
	if n <= wholeMinBody || r.ProtoMajor != 1 {
		return nil
	}
	c, _ := r.Context().Value(ctxKeyConn{}).(gatherer)
	return c
}

// Hold gathers every write to the connection until Release. Only the goroutine serving
// the connection's request may call it: net/http writes an HTTP/1 response from there.
func (c *nginxConn) Hold() { c.held.Hold() }

// Release sends what was gathered since Hold in one write (none if nothing was: the
// handler wrote to a recorder, as the proxy's robots.txt does); a failed write closes the
// connection.
func (c *nginxConn) Release() error { return c.held.Release(c.Conn) }

// goErrorHeaders is what net/http's server (conn.serve) puts after the status line of its own errors.
const goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

func (c *nginxConn) Write(b []byte) (int, error) {
	if c.held.Gather(b) {
		return len(b), nil
	}
	if page, ok := nginxErrorFor(b, time.Now()); ok {
		if _, err := c.Conn.Write(page); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// CloseWrite lets net/http half-close after an error, as it would on the bare TCP connection.
func (c *nginxConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// nginxErrorFor returns nginx's answer for net/http's own error response b, if b is one.
func nginxErrorFor(b []byte, now time.Time) ([]byte, bool) {
	if !bytes.HasPrefix(b, []byte("HTTP/1.1 ")) || len(b) < 12 {
		return nil, false
	}
	eol := bytes.Index(b, []byte("\r\n"))
	if eol < 0 || !bytes.HasPrefix(b[eol:], []byte(goErrorHeaders)) {
		return nil, false
	}
	code, _ := strconv.Atoi(string(b[9:12]))
	var body string
	switch code {
	case http.StatusRequestHeaderFieldsTooLarge: // nginx says 400, with a title of its own
		code = http.StatusBadRequest
		body = "<html>\r\n<head><title>400 Request Header Or Cookie Too Large</title></head>\r\n<body>\r\n" +
			"<center><h1>400 Bad Request</h1></center>\r\n<center>Request Header Or Cookie Too Large</center>\r\n" +
			"<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
	case http.StatusNotImplemented, http.StatusHTTPVersionNotSupported:
	default:
		code = http.StatusBadRequest
	}
	status := fmt.Sprintf("%d %s", code, http.StatusText(code))
	if body == "" {
		body = "<html>\r\n<head><title>" + status + "</title></head>\r\n<body>\r\n<center><h1>" + status +
			"</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
	}
	// The headers of the listener's own 404 (decoy.NotFound through net/http), nginx's Server included.
	return fmt.Appendf(nil, "HTTP/1.1 %s\r\nServer: %s\r\nDate: %s\r\nContent-Type: text/html\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, decoy.ServerHeader, now.UTC().Format(http.TimeFormat), len(body), body), true
}
