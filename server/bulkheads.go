package server

import (
	"context"
	"net/http"
	"runtime"
	"time"

	"github.com/flytrap/flytrap/store"
)

// StatementTimeout is how long one statement of the API's pool may run on PostgreSQL: a
// tenth under --request-timeout, so the database has ended the statement and freed its
// connection by the time the caller is answered 503.
func (c Config) StatementTimeout() time.Duration {
	return c.RequestTimeout - c.RequestTimeout/10
}

// StoreOptions are the choices store.OpenWith needs from the configuration.
func (c Config) StoreOptions() store.Options {
	return store.Options{
		NoPartitions:     !c.PGPartitions,
		APIConns:         c.DBAPIConns,
		TrapConns:        c.DBTrapConns,
		StatementTimeout: c.StatementTimeout(),
	}
}

// apiSlots bounds the API requests served at once, so that API work, however expensive,
// leaves the trap listener its share of the CPU: on SQLite a query runs on this process's
// cores, and JSON, GraphQL and the garbage collector do everywhere. A request waits for a
// slot with its deadline (503 TIMEOUT when it passes), after authentication and the rate
// limit, so neither an anonymous nor a rate-limited request ever queues.
type apiSlots chan struct{}

// APIConcurrency is --api-concurrency, 0 resolved: GOMAXPROCS less one, at least one.
func (c Config) APIConcurrency() int {
	if c.APIConcurrencyLimit > 0 {
		return c.APIConcurrencyLimit
	}
	return max(1, runtime.GOMAXPROCS(0)-1)
}

// acquire takes a slot, or reports false when ctx ends first.
func (a apiSlots) acquire(ctx context.Context) bool {
	select {
	case a <- struct{}{}:
		return true
	default:
	}
	select {
	case a <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (a apiSlots) release() { <-a }

// work serves next in an API slot. WebSocket upgrades pass (each operation takes a slot
// while it executes; a subscription's life does not), as do event streams, which routes
// does not wrap.
func (s *Server) work(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isWebsocketUpgrade(r) {
			next.ServeHTTP(w, r)
			return
		}
		if !s.slots.acquire(r.Context()) {
			return // the deadline middleware answers 503; a caller that left gets nothing
		}
		defer s.slots.release()
		next.ServeHTTP(w, r)
	})
}
