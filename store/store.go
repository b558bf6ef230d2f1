// Package store opens the database a Flytrap instance runs on: an embedded
// SQLite file by default, or PostgreSQL for a shared, multi-instance setup.
package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	_ "github.com/lib/pq"  // PostgreSQL driver
	_ "modernc.org/sqlite" // pure-Go SQLite driver

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/migrate"
	_ "github.com/flytrap/flytrap/ent/runtime" // hooks and privacy policies
)

var migrateMu sync.Mutex

// DB is an open database.
type DB struct {
	Client  *ent.Client
	SQL     *sql.DB
	Dialect string // dialect.SQLite or dialect.Postgres
	// DSN is what the driver connected with (PostgreSQL: for the LISTEN connection).
	DSN string
}

// Open connects to dsn — a postgres:// URL, or a SQLite file path (optionally sqlite:PATH) —
// and creates or upgrades the schema.
func Open(ctx context.Context, dsn string) (*DB, error) {
	driver, source, dia, err := parse(dsn)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open(driver, source)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if dia == dialect.Postgres {
		db.SetMaxOpenConns(20)
		db.SetMaxIdleConns(10)
		db.SetConnMaxIdleTime(5 * time.Minute)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	client := ent.NewClient(ent.Driver(entsql.OpenDB(dia, db)))
	if err := migrateSchema(ctx, client, db, dia); err != nil {
		client.Close()
		return nil, fmt.Errorf("migrate schema: %w", err)
	}
	return &DB{Client: client, SQL: db, Dialect: dia, DSN: source}, nil
}

// migrationLock is the PostgreSQL advisory lock key instances take around migrating,
// so several starting together on a new database do not race to create the same types.
const migrationLock = 0x466c797472617001 // "Flytrap" + 1

// migrateSchema creates or upgrades the schema, one migration at a time: per process
// (ent's migration writes package-level table descriptions) and per PostgreSQL database.
func migrateSchema(ctx context.Context, client *ent.Client, db *sql.DB, dia string) error {
	migrateMu.Lock()
	defer migrateMu.Unlock()
	if dia == dialect.Postgres {
		conn, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", int64(migrationLock)); err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(migrationLock))
	}
	if err := client.Schema.Create(ctx, migrate.WithDropIndex(true)); err != nil {
		return err
	}
	// Outside ent's schema: nothing queries it but the readiness probe (WriteProbe).
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS flytrap_readiness (instance VARCHAR(64) PRIMARY KEY, checked_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("create the readiness table: %w", err)
	}
	return nil
}

// WriteProbe proves that the database accepts a write: it upserts the one row of
// instance (each process names itself, so instances sharing a database never touch
// each other's row) in a table of its own. Rows of instances gone for a day are
// removed when stale is true.
func (d *DB) WriteProbe(ctx context.Context, instance string, now time.Time, stale bool) error {
	upsert := `INSERT INTO flytrap_readiness (instance, checked_at) VALUES ($1, $2)
		ON CONFLICT (instance) DO UPDATE SET checked_at = excluded.checked_at`
	del := `DELETE FROM flytrap_readiness WHERE checked_at < $1`
	if d.Dialect == dialect.SQLite {
		upsert, del = strings.ReplaceAll(strings.ReplaceAll(upsert, "$1", "?"), "$2", "?"), strings.ReplaceAll(del, "$1", "?")
	}
	if _, err := d.SQL.ExecContext(ctx, upsert, instance, now.UnixMilli()); err != nil {
		return err
	}
	if stale {
		if _, err := d.SQL.ExecContext(ctx, del, now.Add(-24*time.Hour).UnixMilli()); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the connection pool.
func (d *DB) Close() error { return d.Client.Close() }

// Ping checks that the database answers.
func (d *DB) Ping(ctx context.Context) error { return d.SQL.PingContext(ctx) }

func parse(dsn string) (driver, source, dia string, err error) {
	dsn = strings.TrimSpace(dsn)
	switch {
	case dsn == "":
		return "", "", "", fmt.Errorf("no database given")
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		u, err := url.Parse(dsn)
		if err != nil {
			return "", "", "", fmt.Errorf("database URL: %w", err)
		}
		// Times come back in the session's zone; the API speaks UTC whatever the server's setting.
		q := u.Query()
		if q.Get("timezone") == "" {
			q.Set("timezone", "UTC")
			u.RawQuery = q.Encode()
		}
		return "postgres", u.String(), dialect.Postgres, nil
	default:
		path := strings.TrimPrefix(dsn, "sqlite:")
		path = strings.TrimPrefix(path, "//")
		if path == "" {
			return "", "", "", fmt.Errorf("no SQLite file given")
		}
		// One writer at a time: immediate transactions take the write lock up front
		// instead of failing with SQLITE_BUSY when a read turns into a write.
		// temp_store(MEMORY) keeps temporary data in memory: above all the statement
		// journal a multi-row write keeps inside a transaction (to undo just that
		// statement), which past 64 KiB otherwise spills to a temporary file created,
		// written and removed each time. Nothing temporary is ever durable; the price is
		// that a large sort with no index to follow sorts in memory too.
		q := url.Values{}
		q.Add("_pragma", "foreign_keys(1)")
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "busy_timeout(10000)")
		q.Add("_pragma", "synchronous(NORMAL)")
		q.Add("_pragma", "temp_store(MEMORY)")
		q.Set("_txlock", "immediate")
		return "sqlite", "file:" + path + "?" + q.Encode(), dialect.SQLite, nil
	}
}
