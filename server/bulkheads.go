package server

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"runtime"
	"time"

	"github.com/flytrap/flytrap/store"
)

// registerBulkheads adds the flags of the database pools: the API's and the trap
// listener's, which no API caller can take (docs/security.md, "Bulkheads").
func (c *Config) registerBulkheads(fs *flag.FlagSet) {
	fs.IntVar(&c.DBAPIConns, "db-api-conns", c.DBAPIConns, "database connections the API may hold at once (GraphQL, REST, streams, webhooks, retention); 0: 16 on PostgreSQL, GOMAXPROCS (at least 4) on SQLite")
	fs.IntVar(&c.APIConcurrencyLimit, "api-concurrency", c.APIConcurrencyLimit, "API requests served at once (event streams and idle subscriptions aside); more wait for a slot until their deadline; 0: GOMAXPROCS less one, at least 1, so the trap listener keeps a core")
	fs.IntVar(&c.DBTrapConns, "db-trap-conns", c.DBTrapConns, "database connections of the trap listener and the hit writer, which the API never uses; 0: 4")
}

func (c Config) validateBulkheads() error {
	if c.DBAPIConns < 0 || c.DBAPIConns > 1000 || c.DBTrapConns < 0 || c.DBTrapConns > 1000 {
		return errors.New("db-api-conns and db-trap-conns: must be between 0 (the default) and 1000")
	}
	if c.APIConcurrencyLimit < 0 || c.APIConcurrencyLimit > 10000 {
		return errors.New("api-concurrency: must be between 0 (the default) and 10000")
	}
	if c.DBTrapConns == 1 {
		return errors.New("db-trap-conns: must be at least 2 (the writer's transaction and a route reload)")
	}
	return nil
}

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
