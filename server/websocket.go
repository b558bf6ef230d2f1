package server

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/gorilla/websocket"
)

var writeBufferPool = &sync.Pool{}

// gorillaWebsocket plugs gorilla/websocket into gqlgen's WebSocket transport.
type gorillaWebsocket struct {
	allowedOrigins []string // exact origins (scheme://host[:port]); "*" allows any
}

var _ transport.WebsocketImplementation = gorillaWebsocket{}

func (g gorillaWebsocket) Accept(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	up := websocket.Upgrader{
		HandshakeTimeout: 10 * time.Second,
		Subprotocols:     opts.Subprotocols,
		CheckOrigin:      g.checkOrigin,
		// Buffer sizes 0 reuse the HTTP server's buffers, and writes borrow from a pool:
		// an idle subscription then holds no write buffer of its own.
		WriteBufferPool: writeBufferPool,
	}
	conn, err := up.Upgrade(w, r, opts.ResponseHeader)
	if err != nil {
		return nil, err
	}
	return &gorillaConn{conn: conn}, nil
}

// checkOrigin allows clients without an Origin (not browsers), same-origin pages,
// and the configured origins. Anything else could be a page riding a user's session.
func (g gorillaWebsocket) checkOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	return slices.Contains(g.allowedOrigins, "*") || slices.ContainsFunc(g.allowedOrigins, func(o string) bool {
		return strings.EqualFold(strings.TrimRight(o, "/"), origin)
	})
}

type gorillaConn struct {
	conn *websocket.Conn
	wmu  sync.Mutex // gorilla allows one concurrent writer
}

var (
	_ transport.WebsocketReadLimiter   = (*gorillaConn)(nil)
	_ transport.WebsocketReadDeadliner = (*gorillaConn)(nil)
)

func (c *gorillaConn) Close() error { return c.conn.Close() }

func (c *gorillaConn) NextReader() (int, io.Reader, error) {
	typ, r, err := c.conn.NextReader()
	if websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseNoStatusReceived) {
		return typ, nil, transport.ErrWebsocketClosed
	}
	return typ, r, err
}

func (c *gorillaConn) WriteJSON(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return c.conn.WriteJSON(v)
}

func (c *gorillaConn) WriteClose(code int, message string) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	err := c.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, message), time.Now().Add(time.Second))
	if errors.Is(err, websocket.ErrCloseSent) {
		return nil
	}
	return err
}

func (c *gorillaConn) Subprotocol() string { return c.conn.Subprotocol() }

func (c *gorillaConn) SetReadLimit(limit int64) { c.conn.SetReadLimit(limit) }

func (c *gorillaConn) SetReadDeadline(t time.Time) error { return c.conn.SetReadDeadline(t) }
