package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/rest"
	"github.com/flytrap/flytrap/server/auth"
	"github.com/flytrap/flytrap/server/httpx"
	"github.com/flytrap/flytrap/viewer"
)

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	gql := s.graphQLHandler()
	compress := compressor()
	// A body is read only once its sender has authenticated (limitBody refuses a
	// declared oversize one before); every request but a stream or WebSocket has a deadline
	// and a compressed answer when the client accepts one.
	mux.Handle("/graphql", compress(s.deadline(s.authenticate(s.readBody(s.slots.Serve(gql)), graphQLErrors), graphQLErrors)))
	api := rest.New(s.app, s.log, rest.Options{
		Stopping:  s.stopping,
		Heartbeat: s.cfg.StreamHeartbeat,
	})
	for _, rt := range api.Routes() {
		var h http.Handler
		if rt.Pattern == rest.StreamRoute {
			h = s.authenticate(s.readBody(rt.Handler), restErrors)
		} else {
			h = compress(s.deadline(s.authenticate(s.readBody(s.slots.Serve(rt.Handler)), restErrors), restErrors))
		}
		mux.Handle(rt.Pattern, h)
	}
	for _, rt := range api.PublicRoutes() {
		mux.Handle(rt.Pattern, compress(s.deadline(s.readBody(rt.Handler), restErrors)))
	}
	for _, rt := range api.MethodNotAllowed() {
		mux.Handle(rt.Pattern, rt.Handler)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	if s.cfg.Metrics {
		mux.Handle("GET /metrics", s.deadline(s.metricsHandler(), restErrors))
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", "GET, HEAD")
			restError(w, http.StatusMethodNotAllowed, "method "+r.Method+" is not allowed here (allowed: GET, HEAD)")
		})
	}
	mux.Handle("/", compress(s.dashboard())) // the embedded dashboard (server/web.go); JSON 404 for unknown API routes
	return s.writeDeadline(httpx.WithRequestID(httpx.LogRequests(s.log, s.observeRequest, httpx.RecoverPanics(s.log, restErrors, apiVersion(s.limitBody(s.overRate(mux)))))))
}

// maxTarpit bounds the refusals held back at once (hold).
const maxTarpit = 1024

// hold delays a refusal by wait, at most a second, so that a client that ignores
// Retry-After and asks again at once is slowed to a few requests a second per connection;
// a held request costs a timer, not a core. Past maxTarpit held at once, refusals go at once.
func (s *Server) hold(ctx context.Context, wait time.Duration) {
	if s.tarpit.Add(1) <= maxTarpit {
		t := time.NewTimer(min(wait, time.Second))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	s.tarpit.Add(-1)
}

// overRate answers 429 to a request whose Authorization authenticated before and
// whose credential's bucket is empty: before compression, the deadline's goroutine and
// buffer, the body and any lookup (authenticate takes the token of a request that passes).
func (s *Server) overRate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := r.Header.Get("Authorization")
		if header == "" {
			next.ServeHTTP(w, r)
			return
		}
		over, wait := s.limiter.exhausted(w, header)
		if !over {
			next.ServeHTTP(w, r)
			return
		}
		fail := restErrors
		if strings.HasPrefix(r.URL.Path, "/graphql") {
			fail = graphQLErrors
		}
		s.refuseOverRate(w, r, wait, fail)
	})
}

// refuseOverRate answers 429 to a request over its credential's rate once a token would be
// back (hold): a client that ignores Retry-After gets a rate's worth of answers per
// connection. The connection is kept when its unread body is small: net/http discards up to
// 256 KiB, which costs less than the new connection a close makes the client open.
func (s *Server) refuseOverRate(w http.ResponseWriter, r *http.Request, wait time.Duration, fail errorWriter) {
	s.hold(r.Context(), wait)
	if r.ContentLength < 0 || r.ContentLength > 256<<10 {
		w.Header().Set("Connection", "close")
	}
	fail(w, errRateLimited)
}

// streamPath is the event stream's path, which writes as long as its client stays.
var streamPath = strings.TrimPrefix(rest.StreamRoute, "GET ")

// writeDeadline bounds how long an answer may take to leave: twice --request-timeout from
// the request's start, the second for the client to read it. The listener has no write timeout of its own (streams and WebSockets
// write for hours, with a deadline per write of their own); without this, a client that
// stops reading would hold its answer (up to the cost limit's bytes), a goroutine and a
// descriptor until TCP gave up.
func (s *Server) writeDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !httpx.IsWebsocketUpgrade(r) && r.URL.Path != streamPath {
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(2 * s.cfg.RequestTimeout))
		}
		next.ServeHTTP(w, r)
	})
}

// errorWriter writes an error in the shape of one API; its kind gives the status and code.
type errorWriter = httpx.ErrorWriter

// observeRequest counts a request in the metrics; event streams, like hijacked
// connections, are long-lived.
func (s *Server) observeRequest(r *http.Request, status int, took time.Duration, hijacked bool) {
	s.metrics.request(httpx.Route(r), r.Method, status, took, hijacked || r.Pattern == rest.StreamRoute)
}

// deadline is httpx.Deadline at --request-timeout.
func (s *Server) deadline(next http.Handler, fail errorWriter) http.Handler {
	return httpx.Deadline(s.cfg.RequestTimeout, s.log, fail, next)
}

// graphQLErrors writes a GraphQL response carrying only errors.
func graphQLErrors(w http.ResponseWriter, e *apperr.Error) {
	status, code, msg := e.Status(), e.Code(), e.Message(nil)
	writeJSON(w, status, map[string]any{
		"errors": []map[string]any{{"message": msg, "extensions": map[string]any{"code": code}}},
		"data":   nil,
	})
}

// restError writes the REST shape {"success": false, "error": "…"}.
func restError(w http.ResponseWriter, status int, msg string) { rest.Error(w, status, msg) }

func restErrors(w http.ResponseWriter, e *apperr.Error) { restError(w, e.Status(), e.Message(nil)) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// authenticate puts the caller's viewer in the request context, or answers 401.
// A WebSocket upgrade without the header may authenticate in connection_init instead.
func (s *Server) authenticate(next http.Handler, fail errorWriter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := r.Header.Get("Authorization")
		if httpx.IsWebsocketUpgrade(r) && !s.ws.CheckOrigin(r) {
			fail(w, apperr.New(apperr.KindForbidden, "this origin may not open WebSockets here"))
			return
		}
		if header == "" && httpx.IsWebsocketUpgrade(r) {
			if s.fails.Blocked(w, r) { // its connection_init would be refused anyway
				s.hold(r.Context(), time.Second)
				fail(w, errTooManyFailures)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		refuse := func(w http.ResponseWriter, e *apperr.Error) {
			if r.ContentLength != 0 {
				// The body is refused unread: net/http would read it before answering, unless the connection ends.
				w.Header().Set("Connection", "close")
			}
			fail(w, e)
		}
		if s.fails.Blocked(w, r) {
			s.hold(r.Context(), time.Second)
			refuse(w, errTooManyFailures)
			return
		}
		v, err := s.auth.Authenticate(r.Context(), header)
		if err != nil {
			if errors.Is(err, auth.ErrUnauthenticated) {
				s.fails.Failed(r)
				w.Header().Set("WWW-Authenticate", `Bearer realm="flytrap"`)
				refuse(w, apperr.New(apperr.KindUnauthenticated, err.Error()))
				return
			}
			s.log.ErrorContext(r.Context(), "authentication failed", "err", err)
			refuse(w, apperr.Internal("internal error"))
			return
		}
		s.gate.Authenticated(r.Context())
		allowed, wait := s.limiter.allow(w, v)
		if wait > 0 {
			// The bucket is empty: overRate refuses this header's next requests before any
			// lookup (learnt only now, so a request within the rate pays no hash or cache write).
			s.limiter.learn(header, v)
		}
		if !allowed {
			s.refuseOverRate(w, r, wait, fail)
			return
		}
		next.ServeHTTP(w, r.WithContext(viewer.NewContext(r.Context(), v)))
	})
}

var errRateLimited = apperr.New(apperr.KindTooMany, "rate limit exceeded; retry after the time in Retry-After")

// limitBody refuses a body whose declared size is over the limit with 413, before
// anything reads it; readBody enforces the limit on the bytes themselves.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > s.cfg.MaxBodyBytes {
			w.Header().Set("Connection", "close") // refused unread
			s.bodyTooLarge(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) bodyTooLarge(w http.ResponseWriter, r *http.Request) {
	msg := fmt.Sprintf("request body too large (at most %d bytes)", s.cfg.MaxBodyBytes)
	if strings.HasPrefix(r.URL.Path, "/graphql") {
		graphQLErrors(w, apperr.New(apperr.KindTooLarge, msg))
	} else {
		restErrors(w, apperr.New(apperr.KindTooLarge, msg))
	}
}

// readBody reads the request body, at most the configured size (413 beyond), before the
// handler runs, so that handlers see a whole body or none. Authenticated routes call it
// after authentication: an anonymous sender gets its 401 without being read.
func (s *Server) readBody(next http.Handler) http.Handler {
	limit := s.cfg.MaxBodyBytes
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		if err != nil {
			restError(w, http.StatusBadRequest, "could not read the request body")
			return
		}
		if int64(len(body)) > limit {
			s.bodyTooLarge(w, r)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// errTooManyFailures answers an address whose failed authentications used up its allowance.
var errTooManyFailures = apperr.New(apperr.KindTooMany, "too many failed authentications from this address; retry after the time in Retry-After")
