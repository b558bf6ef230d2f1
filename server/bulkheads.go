package server

import (
	"errors"
	"flag"
	"time"

	"github.com/flytrap/flytrap/store"
)

// registerBulkheads adds the flags of the database pools: the API's and the trap
// listener's, which no API caller can take (docs/security.md, "Bulkheads").
func (c *Config) registerBulkheads(fs *flag.FlagSet) {
	fs.IntVar(&c.DBAPIConns, "db-api-conns", c.DBAPIConns, "database connections the API may hold at once (GraphQL, REST, streams, webhooks, retention); 0: 16 on PostgreSQL, GOMAXPROCS (at least 4) on SQLite")
	fs.IntVar(&c.DBTrapConns, "db-trap-conns", c.DBTrapConns, "database connections of the trap listener and the hit writer, which the API never uses; 0: 4")
}

func (c Config) validateBulkheads() error {
	if c.DBAPIConns < 0 || c.DBAPIConns > 1000 || c.DBTrapConns < 0 || c.DBTrapConns > 1000 {
		return errors.New("db-api-conns and db-trap-conns: must be between 0 (the default) and 1000")
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
