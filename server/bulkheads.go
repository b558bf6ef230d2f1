package server

import (
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

// APIConcurrency is --api-concurrency, 0 resolved: GOMAXPROCS less one, at least one.
func (c Config) APIConcurrency() int {
	if c.APIConcurrencyLimit > 0 {
		return c.APIConcurrencyLimit
	}
	return max(1, runtime.GOMAXPROCS(0)-1)
}
