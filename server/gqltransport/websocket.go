package gqltransport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/gorilla/websocket"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/flytrap/flytrap/graph"
	"github.com/flytrap/flytrap/server/auth"
	"github.com/flytrap/flytrap/server/httpx"
	"github.com/flytrap/flytrap/viewer"
)

// The GraphQL-over-WebSocket subprotocols: graphql-transport-ws (the graphql-ws npm
// library's) and the legacy graphql-ws (subscriptions-transport-ws), chosen when the
// client names no subprotocol.
const (
	protoTransportWS = "graphql-transport-ws"
	protoLegacy      = "graphql-ws"
)

// Close codes of graphql-transport-ws, used for both subprotocols.
const (
	closeInvalidMessage = 4400
	closeUnauthorized   = 4401
	closeInitTimeout    = 4408
	closeDuplicateID    = 4409
	closeTooManyInits   = 4429
	closeTooManyOps     = 4429 // ours: operations kept coming after being refused (refusals)
	closeInternal       = 4500
)

// refusals is the allowance of refused operations (over the connection's cap or its
// credential's rate) a connection has: maxRefused at once, then one a second. A client
// that backs off when refused never runs out; one that keeps sending is closed with
// closeTooManyOps and stops costing even the refusals.
type refusals struct {
	debt float64 // refusals not yet forgiven
	last time.Time
}

const maxRefused = 100

// add counts one refusal at now and reports whether the allowance is spent.
func (r *refusals) add(now time.Time) (spent bool) {
	if !r.last.IsZero() {
		r.debt = max(0, r.debt-now.Sub(r.last).Seconds())
	}
	r.last = now
	r.debt++
	return r.debt > maxRefused
}

// WebSocket serves GraphQL over WebSocket on gorilla/websocket. It is ours rather
// than gqlgen's so that an idle connection costs little: one goroutine (its reader,
// started fresh so the HTTP handler's deep stack unwinds), a small read buffer, no
// write buffer (writes borrow one from a pool), and no goroutine per subscription —
// subscriptions are driven by their follower (graph.Deliverer), keep-alives by a timer.
// An operation is admitted by the reader before anything is spent on it (wsConn.admit):
// the connection's cap on operations in flight, then the credential's rate limit.
type WebSocket struct {
	upgrader websocket.Upgrader
	auth     func(ctx context.Context, authorization string) (context.Context, int, error)
	// Admit is the per-credential rate limit, checked per operation; tests replace it.
	Admit      func(ctx context.Context) error
	maxOps     int                     // operations in flight per connection
	slots      httpx.Slots             // the API's slots: an operation executes in one
	authFailed func(remoteAddr string) // counts a refused connection_init toward the address's limit
	gate       *httpx.ConnGate         // a socket counts as unauthenticated until its connection_init
	log        *slog.Logger
	readLimit  int64
	// InitTimeout is how long a socket may wait before its connection_init; tests shorten it.
	InitTimeout time.Duration
	keepAlive   time.Duration

	mu     sync.Mutex
	conns  map[*wsConn]struct{}
	closed bool

	panics atomic.Int64 // recovered in connections' goroutines
}

var _ graphql.Transport = (*WebSocket)(nil)

var writeBufferPool = &sync.Pool{}

// WebSocketOptions are what the WebSocket transport is built from.
type WebSocketOptions struct {
	Authenticate   func(ctx context.Context, header string) (viewer.Viewer, error)
	Admit          func(ctx context.Context) error // the per-credential rate limit, per operation
	AuthFailed     func(remoteAddr string)         // counts a refused connection_init toward the address's limit
	Gate           *httpx.ConnGate                 // a socket counts as unauthenticated until its connection_init
	Slots          httpx.Slots                     // the API's slots: an operation executes in one
	Log            *slog.Logger
	AllowedOrigins []string      // --allowed-origins
	MaxOperations  int           // --ws-max-operations
	ReadLimit      int64         // --max-body-bytes: the largest message
	KeepAlive      time.Duration // --stream-heartbeat
}

// NewWebSocket is the GraphQL-over-WebSocket transport New serves.
func NewWebSocket(o WebSocketOptions) *WebSocket {
	origins := websocketOrigins{allowed: o.AllowedOrigins}
	t := &WebSocket{
		slots: o.Slots,
		upgrader: websocket.Upgrader{
			HandshakeTimeout: 10 * time.Second,
			Subprotocols:     []string{protoTransportWS, protoLegacy},
			CheckOrigin:      origins.check,
			ReadBufferSize:   256, // frames stream through it; a larger one would sit idle
			WriteBufferPool:  writeBufferPool,
		},
		Admit:       o.Admit,
		maxOps:      o.MaxOperations,
		authFailed:  o.AuthFailed,
		gate:        o.Gate,
		log:         o.Log,
		readLimit:   o.ReadLimit,
		InitTimeout: 10 * time.Second,
		keepAlive:   o.KeepAlive,
		conns:       map[*wsConn]struct{}{},
	}
	t.auth = func(ctx context.Context, header string) (context.Context, int, error) {
		return t.authenticate(ctx, header, o.Authenticate)
	}
	return t
}

// authenticate authenticates a WebSocket by connection_init's Authorization, or by
// the upgrade request's header that the HTTP middleware already checked. A refusal
// comes with the close code to end the connection with.
func (t *WebSocket) authenticate(ctx context.Context, header string, check func(context.Context, string) (viewer.Viewer, error)) (context.Context, int, error) {
	if header == "" {
		if _, ok := viewer.FromContext(ctx); ok {
			return ctx, 0, nil
		}
	}
	v, err := check(ctx, header)
	if err != nil {
		if !errors.Is(err, auth.ErrUnauthenticated) {
			t.log.ErrorContext(ctx, "websocket authentication", "err", err)
			return ctx, closeInternal, errors.New("internal error")
		}
		return ctx, closeUnauthorized, errors.New("unauthorized")
	}
	return viewer.NewContext(ctx, v), 0, nil
}

// CheckOrigin reports whether r's Origin may open a WebSocket (the HTTP middleware asks
// before it authenticates an upgrade).
func (t *WebSocket) CheckOrigin(r *http.Request) bool { return t.upgrader.CheckOrigin(r) }

// Panics counts the panics recovered in connections' goroutines.
func (t *WebSocket) Panics() int64 { return t.panics.Load() }

func (t *WebSocket) Supports(r *http.Request) bool { return r.Header.Get("Upgrade") != "" }

func (t *WebSocket) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	conn, err := t.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered: 400, or 403 for a foreign origin
	}
	conn.SetReadLimit(t.readLimit)
	c := &wsConn{
		t: t, conn: conn, exec: exec, legacy: conn.Subprotocol() != protoTransportWS,
		// The connection outlives this handler, whose request context ends when it returns.
		ctx: context.WithoutCancel(r.Context()), ops: map[string]*wsOp{},
		authorization: r.Header.Get("Authorization"), remoteAddr: r.RemoteAddr,
		signedIn: func() {},
	}
	// Upgraded without credentials, it has not authenticated: it keeps the place its HTTP
	// connection had among --max-unauthenticated-conns (the upgrade freed it) until its
	// connection_init succeeds or it closes.
	if _, ok := viewer.FromContext(r.Context()); !ok && t.gate != nil {
		if !t.gate.Enter() {
			c.closeWith(websocket.CloseTryAgainLater, "Too many connections have not authenticated")
			return
		}
		c.signedIn = sync.OnceFunc(t.gate.Leave)
	}
	t.mu.Lock()
	closed := t.closed
	if !closed {
		t.conns[c] = struct{}{}
	}
	t.mu.Unlock()
	if closed {
		c.signedIn()
		c.closeWith(websocket.CloseGoingAway, "the server is shutting down")
		return
	}
	go c.serve()
}

// Close ends every connection (the service is shutting down); later ones are refused.
func (t *WebSocket) Close() {
	t.mu.Lock()
	t.closed = true
	conns := make([]*wsConn, 0, len(t.conns))
	for c := range t.conns {
		conns = append(conns, c)
	}
	t.mu.Unlock()
	for _, c := range conns {
		c.closeWith(websocket.CloseGoingAway, "the server is shutting down")
	}
}

// websocketOrigins checks a WebSocket's Origin: clients without one (not browsers),
// same-origin pages, and the configured origins pass. Anything else could be a page
// riding a user's session.
type websocketOrigins struct {
	allowed []string // exact origins (scheme://host[:port]); "*" allows any
}

func (o websocketOrigins) check(r *http.Request) bool {
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
	return slices.Contains(o.allowed, "*") || slices.ContainsFunc(o.allowed, func(a string) bool {
		return strings.EqualFold(strings.TrimRight(a, "/"), origin)
	})
}

// wsMessage is a message of either subprotocol.
type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

type wsConn struct {
	t      *WebSocket
	conn   *websocket.Conn
	exec   graphql.GraphExecutor
	legacy bool

	// Only the reader goroutine writes these; operations start after connection_ack.
	ctx   context.Context // the authenticated connection's, once initialised
	acked bool
	// authorization is the credential the connection signed in with (connection_init's,
	// else the upgrade request's); every operation is authorised with it again.
	authorization string
	remoteAddr    string
	signedIn      func() // frees its place among the unauthenticated connections (once)
	refused       refusals

	wmu    sync.Mutex // gorilla allows one writer at a time
	mu     sync.Mutex
	ops    map[string]*wsOp
	closed bool

	timer   *time.Timer // keep-alive
	pingOut atomic.Bool // a ping went out and no pong came back yet
}

// serve reads the client's messages until the connection ends.
func (c *wsConn) serve() {
	defer c.shutdown()
	defer c.recoverPanic("reading messages", func() { c.closeWith(closeInternal, "Internal error") })
	_ = c.conn.SetReadDeadline(time.Now().Add(c.t.InitTimeout))
	for {
		_, data, err := c.conn.ReadMessage()
		if err != nil {
			var ne interface{ Timeout() bool }
			if !c.acked && errors.As(err, &ne) && ne.Timeout() {
				c.closeWith(closeInitTimeout, "Connection initialisation timeout")
			}
			return
		}
		var m wsMessage
		if err := json.Unmarshal(data, &m); err != nil {
			c.refuse(closeInvalidMessage, "Invalid message received")
			return
		}
		if !c.handle(m) {
			return
		}
	}
}

// handle acts on one message; false ends the connection.
func (c *wsConn) handle(m wsMessage) bool {
	switch m.Type {
	case "connection_init":
		if c.acked {
			c.closeWith(closeTooManyInits, "Too many initialisation requests")
			return false
		}
		ctx, header, code, err := c.authenticate(m.Payload)
		if err != nil {
			if code == closeUnauthorized {
				c.t.authFailed(c.remoteAddr)
			}
			c.refuse(code, err.Error())
			return false
		}
		// Signing in is a request of the credential's, as the upgrade is when it carries the
		// header (and took a token then): a client reconnecting to flood is held to the
		// credential's rate too.
		if c.authorization == "" {
			if err := c.t.Admit(ctx); err != nil {
				c.t.authFailed(c.remoteAddr) // a flooder reconnecting: its address is blocked like a key guesser's
				c.refuse(closeTooManyOps, "Too many requests: "+graph.Present(err).Message(graph.GraphQLName))
				return false
			}
		}
		if header != "" {
			c.authorization = header
		}
		c.ctx, c.acked = ctx, true
		c.signedIn()
		_ = c.conn.SetReadDeadline(time.Time{})
		_ = c.send(wsMessage{Type: "connection_ack"})
		if c.legacy {
			_ = c.send(wsMessage{Type: "ka"})
		}
		c.mu.Lock()
		c.timer = time.AfterFunc(c.t.keepAlive, c.keepAlive)
		c.mu.Unlock()
	case "ping":
		_ = c.send(wsMessage{Type: "pong", Payload: m.Payload})
	case "pong":
		c.pingOut.Store(false)
	case "subscribe", "start":
		if !c.acked {
			c.closeWith(closeUnauthorized, "Unauthorized")
			return false
		}
		if m.ID == "" {
			c.refuse(closeInvalidMessage, "Invalid message received: no id")
			return false
		}
		c.mu.Lock()
		_, dup := c.ops[m.ID]
		inFlight := len(c.ops)
		c.mu.Unlock()
		if dup {
			c.closeWith(closeDuplicateID, "Subscriber for "+m.ID+" already exists")
			return false
		}
		if refusal := c.admit(m.ID, inFlight); refusal != nil {
			c.sendErrors(m.ID, gqlerror.List{refusal})
			if c.refused.add(time.Now()) {
				// Counted as a failed authentication of its address: a flooder that reconnects is
				// soon refused before its upgrade (429), which costs far less than a socket.
				c.t.authFailed(c.remoteAddr)
				c.refuseLingering(closeTooManyOps, "Too many requests: operations kept coming after being refused")
				return false
			}
			return true
		}
		c.start(m.ID, m.Payload)
	case "complete", "stop":
		c.stop(m.ID)
	case "connection_terminate":
		c.closeWith(websocket.CloseNormalClosure, "terminated")
		return false
	default:
		c.refuse(closeInvalidMessage, "Invalid message received")
		return false
	}
	return true
}

// admit decides, on the reader and before any goroutine, database lookup or buffer is
// spent on it, whether an operation may start: under the connection's cap on operations
// in flight, then with a token of its credential's rate limit (the one its HTTP requests
// draw from). A refusal is the operation's error; it costs a map length, a token
// bucket's arithmetic and the error's write.
func (c *wsConn) admit(id string, inFlight int) (refusal *gqlerror.Error) {
	defer c.recoverPanic("admitting operation "+id, func() { refusal = internalError()[0] })
	if inFlight >= c.t.maxOps {
		return Coded(fmt.Sprintf("this connection already runs %d operations, the most one may (ws-max-operations): complete one first", inFlight), graph.CodeRateLimited)
	}
	if err := c.t.Admit(c.ctx); err != nil {
		e := graph.Present(err)
		return Coded(e.Message(graph.GraphQLName), e.Code())
	}
	return nil
}

// authenticate checks connection_init's credentials on a goroutine of its own: the
// check goes deep (down to the database), and the reader's stack, which every idle
// connection keeps, would stay that deep.
func (c *wsConn) authenticate(payload json.RawMessage) (ctx context.Context, header string, code int, err error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer c.recoverPanic("authenticating", func() { code, err = closeInternal, errors.New("internal error") })
		header = authorization(payload) // decoding JSON goes deep too
		ctx, code, err = c.t.auth(c.ctx, header)
	}()
	<-done
	return ctx, header, code, err
}

// authorization reads the Authorization of a connection_init payload.
func authorization(payload json.RawMessage) string {
	var p map[string]any
	if json.Unmarshal(payload, &p) != nil {
		return ""
	}
	for _, k := range []string{"Authorization", "authorization"} {
		if v, ok := p[k].(string); ok && v != "" {
			return v
		}
	}
	return ""
}

// refuse closes with code, telling a legacy client why first (it has connection_error).
func (c *wsConn) refuse(code int, reason string) {
	if c.legacy {
		payload, _ := json.Marshal(map[string]string{"message": reason})
		_ = c.send(wsMessage{Type: "connection_error", Payload: payload})
	}
	c.closeWith(code, reason)
}

// closeLinger is how long a connection closed for flooding is read (and what comes
// discarded) for the client's close, so that the close code reaches it rather than being
// lost to the reset that closing on unread messages sends.
const closeLinger = 500 * time.Millisecond

// refuseLingering is refuse for a client that is still sending: the close frame, then
// what it sends discarded until its close comes back or closeLinger passes.
func (c *wsConn) refuseLingering(code int, reason string) {
	if c.legacy {
		payload, _ := json.Marshal(map[string]string{"message": reason})
		_ = c.send(wsMessage{Type: "connection_error", Payload: payload})
	}
	c.wmu.Lock()
	err := c.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
	c.wmu.Unlock()
	if err == nil {
		_ = c.conn.SetReadDeadline(time.Now().Add(closeLinger))
		for {
			if _, r, err := c.conn.NextReader(); err != nil {
				break // the client's close, an error or the deadline
			} else if _, err := io.Copy(io.Discard, r); err != nil {
				break
			}
		}
	}
	_ = c.conn.Close()
}

// keepAlive runs on its timer: a ka (legacy) or a ping, and a connection that did
// not answer the last ping is dropped.
func (c *wsConn) keepAlive() {
	defer c.recoverPanic("keep-alive", func() { _ = c.conn.Close() })
	var err error
	if c.legacy {
		err = c.send(wsMessage{Type: "ka"})
	} else {
		if c.pingOut.Load() {
			_ = c.conn.Close() // no pong to the last ping: the reader ends the rest
			return
		}
		c.pingOut.Store(true)
		err = c.send(wsMessage{Type: "ping"})
	}
	if err != nil {
		_ = c.conn.Close()
		return
	}
	c.mu.Lock()
	if !c.closed {
		c.timer.Reset(c.t.keepAlive)
	}
	c.mu.Unlock()
}

// start runs an operation on a goroutine of its own, so that the reader's stack stays
// as small as reading needs (resolving a subscription goes deep, down to the database).
// A subscription that supports it (graph.Deliverer) is then driven by its follower;
// anything else has its responses read by that goroutine.
func (c *wsConn) start(id string, payload json.RawMessage) {
	ctx, cancel := context.WithCancel(c.ctx)
	op := &wsOp{c: c, id: id, cancel: cancel, ready: make(chan struct{})}
	c.mu.Lock()
	c.ops[id] = op // registered now, so that a complete that follows at once finds it
	c.mu.Unlock()
	go op.run(ctx, payload)
}

func (o *wsOp) run(ctx context.Context, payload json.RawMessage) {
	c := o.c
	defer c.recoverPanic("operation "+o.id, func() {
		o.driven, o.responses = false, nil
		c.sendErrors(o.id, internalError())
		c.finish(o, false)
	})
	// It executes in one of the API's slots, as an HTTP request does, its results read
	// included (a subscription only until it is set up: its deliveries are the follower's).
	// The slot is released before anything is written to the client: a client that stops
	// reading blocks a write for up to its 10 s deadline, and would hold the slot (one on two
	// cores) from every other tenant meanwhile.
	acquired := c.t.slots.Acquire(ctx)
	o.release = func() {}
	if acquired {
		o.release = sync.OnceFunc(c.t.slots.Release)
		defer o.release()
	}
	defer func() {
		if o.responses != nil && !o.driven {
			o.readAll()
		}
	}()
	defer close(o.ready)
	if !acquired {
		c.finish(o, false) // the operation was stopped or the connection closed meanwhile
		return
	}
	// Admitted (the rate limit is taken), it is authorised as an HTTP request would be
	// now: a key revoked or a token expired since connection_init runs nothing more. The
	// lookup this costs is one per admitted operation, as it is one per HTTP request.
	ctx, code, err := c.t.auth(ctx, c.authorization)
	if err != nil {
		o.release()
		c.sendErrors(o.id, gqlerror.List{Coded(err.Error(), graph.CodeUnauthenticated)})
		c.finish(o, false)
		c.closeWith(code, err.Error()) // every later operation would be refused too
		return
	}
	params := &graphql.RawParams{}
	if err := json.Unmarshal(payload, params); err != nil {
		o.release()
		c.sendErrors(o.id, gqlerror.List{Coded("invalid json", graph.CodeBadUserInput)})
		c.finish(o, false)
		return
	}
	ctx = graphql.StartOperationTrace(ctx)
	rc, gerr := c.exec.CreateOperationContext(ctx, params)
	if gerr != nil {
		resp := c.exec.DispatchError(graphql.WithOperationContext(ctx, rc), gerr)
		o.release()
		if errcode.GetErrorKind(gerr) == errcode.KindProtocol {
			c.sendErrors(o.id, resp.Errors)
			c.finish(o, false)
		} else {
			_ = c.sendNext(o.id, resp)
			c.finish(o, true)
		}
		return
	}
	ctx = graphql.WithOperationContext(ctx, rc)
	o.subscription = rc.Operation.Operation == ast.Subscription
	o.responses, o.ctx = c.exec.DispatchOperation(graph.WithDeliverer(ctx, o), rc)
}

func internalError() gqlerror.List {
	return gqlerror.List{Coded("internal error", graph.CodeInternal)}
}

// recoverPanic, deferred, keeps a panic in a connection's goroutine from ending the
// process: it is logged with the upgrade request's id, counted, and then cleanup
// answers the one operation (or connection) it happened in.
func (c *wsConn) recoverPanic(where string, cleanup func()) {
	p := recover()
	if p == nil {
		return
	}
	c.t.panics.Add(1)
	c.t.log.Error("panic in a GraphQL WebSocket", "request_id", httpx.RequestID(c.ctx), "where", where,
		"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	cleanup()
}

// stop ends an operation the client stopped.
func (c *wsConn) stop(id string) {
	c.mu.Lock()
	op := c.ops[id]
	delete(c.ops, id)
	c.mu.Unlock()
	if op == nil {
		return
	}
	op.cancel()
	if c.legacy {
		c.sendComplete(id) // the legacy protocol confirms a stop
	}
}

// finish ends op on the server's side, completing it unless the client stopped it already.
func (c *wsConn) finish(op *wsOp, complete bool) {
	c.mu.Lock()
	mine := c.ops[op.id] == op
	if mine {
		delete(c.ops, op.id)
	}
	c.mu.Unlock()
	op.cancel()
	if mine && complete {
		c.sendComplete(op.id)
	}
}

// shutdown ends what the connection holds once its reader is done.
func (c *wsConn) shutdown() {
	c.signedIn()
	c.mu.Lock()
	c.closed = true
	ops := c.ops
	c.ops = map[string]*wsOp{}
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
	for _, op := range ops {
		op.cancel()
	}
	_ = c.conn.Close()
	c.t.mu.Lock()
	delete(c.t.conns, c)
	c.t.mu.Unlock()
}

func (c *wsConn) closeWith(code int, reason string) {
	c.wmu.Lock()
	_ = c.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
	c.wmu.Unlock()
	_ = c.conn.Close()
}

func (c *wsConn) send(m any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return c.conn.WriteJSON(m)
}

type wsPayloadMessage struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Payload any    `json:"payload"`
}

func (c *wsConn) sendNext(id string, resp *graphql.Response) error {
	typ := "next"
	if c.legacy {
		typ = "data"
	}
	return c.send(wsPayloadMessage{ID: id, Type: typ, Payload: resp})
}

func (c *wsConn) sendErrors(id string, errs gqlerror.List) {
	_ = c.send(wsPayloadMessage{ID: id, Type: "error", Payload: errs})
}

func (c *wsConn) sendComplete(id string) {
	_ = c.send(wsMessage{ID: id, Type: "complete"})
}

// wsOp is one operation of a connection. It is the graph.Deliverer of its subscription.
type wsOp struct {
	c            *wsConn
	id           string
	cancel       context.CancelFunc
	driven       bool // set by the resolver, during DispatchOperation
	subscription bool
	ready        chan struct{} // closed once DispatchOperation returned
	release      func()        // gives the operation's API slot back (once; set by run)

	// Set by run before ready closes.
	responses graphql.ResponseHandler
	ctx       context.Context
}

var _ graph.Deliverer = (*wsOp)(nil)

func (o *wsOp) Drive() { o.driven = true }

// Deliver sends the subscription's next result, or completes it at its end.
func (o *wsOp) Deliver() (err error) {
	<-o.ready
	defer o.c.recoverPanic("delivering to "+o.id, func() {
		o.c.sendErrors(o.id, internalError())
		o.c.finish(o, false)
		err = graph.ErrGone
	})
	if o.ctx == nil || o.ctx.Err() != nil {
		return graph.ErrGone
	}
	resp := o.responses(o.ctx)
	if resp == nil {
		o.c.finish(o, true)
		return graph.ErrGone
	}
	if err := o.c.sendNext(o.id, resp); err != nil {
		_ = o.c.conn.Close() // the reader ends the rest
		return graph.ErrGone
	}
	return nil
}

// readAll sends the response of an operation nobody drives (a query, a mutation, a
// subscription over a transport without push), then completes it. A query's or a
// mutation's handler yields exactly one response: calling it again returns nil, which
// a response interceptor may not expect.
func (o *wsOp) readAll() {
	for {
		resp := o.responses(o.ctx)
		o.release() // computed: writing it to the client takes no slot
		if resp == nil {
			break
		}
		if err := o.c.sendNext(o.id, resp); err != nil || !o.subscription {
			break
		}
	}
	o.c.finish(o, true)
}
