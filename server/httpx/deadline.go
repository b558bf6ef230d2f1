package httpx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flytrap/flytrap/apperr"
)

// ErrorWriter writes an error in the shape of one API; its kind gives the status and code.
type ErrorWriter func(w http.ResponseWriter, e *apperr.Error)

// IsWebsocketUpgrade reports whether r asks to become a WebSocket.
func IsWebsocketUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// Deadline gives a request timeout (--request-timeout) to complete. Its context ends then,
// which ends the database statements that honour it; and whatever the handler is
// stuck on (a frozen disk does not honour contexts), the caller is answered at the
// deadline with 503: REST {"success":false,"error":…}, GraphQL code TIMEOUT. The
// handler writes into a buffer until then, so a late answer cannot interleave.
// WebSocket upgrades pass through: they manage their own lifetime, as streams do
// (the routes do not wrap those).
func Deadline(timeout time.Duration, log *slog.Logger, fail ErrorWriter, next http.Handler) http.Handler {
	msg := fmt.Sprintf("the request did not complete within %s (request-timeout); if it changes data, check its effect before retrying", timeout)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsWebsocketUpgrade(r) {
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
						log.ErrorContext(ctx, "panic after the request's deadline", "request_id", RequestID(ctx), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
					}
					return
				}
				if p != nil {
					if p != http.ErrAbortHandler {
						p = handlerPanic{value: p, stack: debug.Stack()} // RecoverPanics logs where it happened
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
			panic(p) // RecoverPanics answers it
		case <-done:
		case <-ctx.Done():
			if bw.abandon() {
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					log.WarnContext(ctx, "request past its deadline", "request_id", RequestID(ctx), "timeout_ms", timeout.Milliseconds())
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

// MarkTimedOut records that a request ran out of time although its context has not (yet):
// PostgreSQL ended a statement at its statement_timeout. The deadline middleware answers it
// as it answers a request past its deadline.
func MarkTimedOut(ctx context.Context) {
	if m, ok := ctx.Value(timedOutKey{}).(*atomic.Bool); ok {
		m.Store(true)
	}
}

// handlerPanic carries a panic, with its stack, from the handler's goroutine to RecoverPanics.
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

// RecoverPanics turns a handler panic into a logged 500 (fail's shape) instead of a dropped
// connection; a panic the deadline carried over is logged with the stack where it happened.
func RecoverPanics(log *slog.Logger, fail ErrorWriter, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				stack := debug.Stack()
				if hp, ok := p.(handlerPanic); ok {
					p, stack = hp.value, hp.stack
				}
				log.ErrorContext(r.Context(), "panic", "request_id", RequestID(r.Context()), "panic", fmt.Sprint(p), "stack", string(stack))
				fail(w, errInternal)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

var errInternal = apperr.New(apperr.KindInternal, "internal error")
