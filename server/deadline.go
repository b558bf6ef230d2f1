package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/server/httpx"
)

// CodeTimeout is the GraphQL error code of a request that ran past the server-side deadline.
const CodeTimeout = apperr.CodeTimeout

// deadline gives a request cfg.RequestTimeout to complete. Its context ends then,
// which ends the database statements that honour it; and whatever the handler is
// stuck on (a frozen disk does not honour contexts), the caller is answered at the
// deadline with 503: REST {"success":false,"error":…}, GraphQL code TIMEOUT. The
// handler writes into a buffer until then, so a late answer cannot interleave.
// WebSocket upgrades pass through: they manage their own lifetime, as streams do
// (routes does not wrap those).
func (s *Server) deadline(next http.Handler, fail errorWriter) http.Handler {
	timeout := s.cfg.RequestTimeout
	msg := fmt.Sprintf("the request did not complete within %s (request-timeout); if it changes data, check its effect before retrying", timeout)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isWebsocketUpgrade(r) {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		timedOut := new(atomic.Bool)
		ctx = context.WithValue(ctx, timedOutKey{}, timedOut)
		bw := &bufferedWriter{h: http.Header{}}
		done := make(chan struct{})
		panicked := make(chan any, 1)
		go func() {
			defer func() {
				p := recover()
				if bw.finish() {
					if p != nil && p != http.ErrAbortHandler {
						// Nobody waits for it any more: log it here, the process lives on.
						s.log.ErrorContext(ctx, "panic after the request's deadline", "request_id", httpx.RequestID(ctx), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
					}
					return
				}
				if p != nil {
					if p != http.ErrAbortHandler {
						p = handlerPanic{value: p, stack: debug.Stack()} // recoverPanics logs where it happened
					}
					panicked <- p
					return
				}
				close(done)
			}()
			next.ServeHTTP(bw, r.WithContext(ctx))
		}()
		select {
		case p := <-panicked:
			panic(p) // recoverPanics answers it
		case <-done:
		case <-ctx.Done():
			if bw.abandon() {
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					s.log.WarnContext(ctx, "request past its deadline", "request_id", httpx.RequestID(ctx), "timeout", timeout)
					fail(w, apperr.New(apperr.KindTimeout, msg))
				}
				return // otherwise the client went away
			}
			select { // the handler finished as the deadline passed
			case p := <-panicked:
				panic(p)
			case <-done:
			}
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) || timedOut.Load() {
			// The deadline passed while the handler still ran, or the database ended one of its
			// statements at the API pool's statement_timeout (a tenth before the deadline):
			// whatever it says (a 5xx, or a GraphQL error in a 200), its statements were cut
			// short. Say so, as at the deadline.
			fail(w, apperr.New(apperr.KindTimeout, msg))
			return
		}
		bw.copyTo(w)
	})
}

type timedOutKey struct{}

// markTimedOut records that a request ran out of time although its context has not (yet):
// PostgreSQL ended a statement at its statement_timeout. The deadline middleware answers it
// as it answers a request past its deadline.
func markTimedOut(ctx context.Context) {
	if m, ok := ctx.Value(timedOutKey{}).(*atomic.Bool); ok {
		m.Store(true)
	}
}

// handlerPanic carries a panic, with its stack, from the handler's goroutine to recoverPanics.
type handlerPanic struct {
	value any
	stack []byte
}

// bufferedWriter holds a response until the deadline middleware sends it or drops it.
type bufferedWriter struct {
	h http.Header

	mu        sync.Mutex
	status    int
	body      bytes.Buffer
	abandoned bool // the caller was answered without this response
	finished  bool // the handler returned or panicked
}

func (b *bufferedWriter) Header() http.Header { return b.h }

func (b *bufferedWriter) WriteHeader(code int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.status == 0 && !b.abandoned {
		b.status = code
	}
}

func (b *bufferedWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.abandoned {
		return 0, http.ErrHandlerTimeout
	}
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}

// finish marks the handler done; it reports whether the response was abandoned already.
func (b *bufferedWriter) finish() (abandoned bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.finished = true
	return b.abandoned
}

// abandon gives up on the response unless the handler has finished; it reports whether it did.
func (b *bufferedWriter) abandon() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return false
	}
	b.abandoned = true
	return true
}

func (b *bufferedWriter) copyTo(w http.ResponseWriter) {
	dst := w.Header()
	for k, v := range b.h {
		dst[k] = v
	}
	if b.status == 0 {
		b.status = http.StatusOK
	}
	w.WriteHeader(b.status)
	_, _ = w.Write(b.body.Bytes())
}
