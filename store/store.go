// Package store opens the database a Flytrap instance runs on: an embedded
// SQLite file by default, or PostgreSQL for a shared, multi-instance setup.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql/schema"
	_ "github.com/lib/pq"  // PostgreSQL driver
	_ "modernc.org/sqlite" // pure-Go SQLite driver

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/migrate"
	_ "github.com/flytrap/flytrap/ent/runtime" // hooks and privacy policies
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/store/upgrade"
	"github.com/flytrap/flytrap/tally"
)

var migrateMu sync.Mutex

// DB is an open database: two connection pools on it, so that no API caller can take the
// connections the trap listener needs (docs/security.md, "Bulkheads").
type DB struct {
	// Client and SQL are the API's pool: GraphQL, REST, streams, webhooks, retention and
	// the command line. On PostgreSQL its statements end at Options.StatementTimeout.
	Client *ent.Client
	SQL    *sql.DB
	// Trap and TrapSQL are the trap listener's own pool: the hit writer, its session
	// lookups and the route snapshot. Nothing else uses it, so however many connections
	// the API holds, the trap listener still has its own.
	Trap    *ent.Client
	TrapSQL *sql.DB
	Dialect string // dialect.SQLite or dialect.Postgres
	// DSN is what the driver connected with (PostgreSQL: for the LISTEN connection).
	DSN string
}

// Default pool sizes (Options.APIConns, Options.TrapConns when zero).
const (
	// DefaultAPIConns is the API pool's size. On SQLite every statement runs on this
	// process's CPU, so the cap is also the most cores API queries can take at once.
	DefaultAPIConns = 16
	// DefaultTrapConns is the trap listener's pool: the writer's transaction, a route
	// reload, and the planted keys' lookups of requests in flight.
	DefaultTrapConns = 4
)

// Options are choices made when a database is created.
type Options struct {
	// NoPartitions creates hits and events on a new PostgreSQL database as plain tables
	// instead of ones range-partitioned by day (docs/operations.md). An existing table is
	// kept as it is either way.
	NoPartitions bool
	// APIConns and TrapConns size the two pools (0: DefaultAPIConns, or GOMAXPROCS (at
	// least 4) on SQLite; DefaultTrapConns).
	APIConns, TrapConns int
	// StatementTimeout, when set, ends any statement of the API's pool that runs longer,
	// on PostgreSQL (its statement_timeout, set per connection): a statement outlives
	// neither its request's deadline nor a client that went away. SQLite statements end
	// with their context (sqlite3_interrupt), which the request's deadline cancels.
	StatementTimeout time.Duration
}

func (o Options) apiConns(dia string) int {
	switch {
	case o.APIConns > 0:
		return o.APIConns
	case dia == dialect.SQLite:
		return max(4, runtime.GOMAXPROCS(0))
	}
	return DefaultAPIConns
}

func (o Options) trapConns() int {
	if o.TrapConns > 0 {
		return o.TrapConns
	}
	return DefaultTrapConns
}

// Open connects to dsn — a postgres:// URL, or a SQLite file path (optionally sqlite:PATH) —
// and creates or upgrades the schema; on a new PostgreSQL database hits is partitioned by day.
func Open(ctx context.Context, dsn string) (*DB, error) {
	return OpenWith(ctx, dsn, Options{})
}

// OpenWith is Open with the choices of opts.
func OpenWith(ctx context.Context, dsn string, opts Options) (*DB, error) {
	driver, source, dia, err := parse(dsn)
	if err != nil {
		return nil, err
	}
	// The trap listener's pool first: the migration runs on it, with no statement
	// timeout (a backfill of a large database may take minutes).
	trapDB, err := openPool(ctx, driver, withParams(source, dia, "flytrap-trap", 0), dia, opts.trapConns())
	if err != nil {
		return nil, err
	}
	if dia == dialect.SQLite {
		if err := incrementalVacuum(ctx, trapDB, false); err != nil {
			trapDB.Close()
			return nil, err
		}
	}
	trapClient := ent.NewClient(ent.Driver(newDriver(dia, trapDB)))
	if err := migrateSchema(ctx, trapClient, trapDB, dia, opts); err != nil {
		trapClient.Close()
		return nil, fmt.Errorf("migrate schema: %w", err)
	}
	if dia == dialect.SQLite {
		if err := analyzeNewIndexes(ctx, trapDB); err != nil {
			trapClient.Close()
			return nil, err
		}
	}
	apiDB, err := openPool(ctx, driver, withParams(source, dia, "flytrap-api", opts.StatementTimeout), dia, opts.apiConns(dia))
	if err != nil {
		trapClient.Close()
		return nil, err
	}
	client := ent.NewClient(ent.Driver(newDriver(dia, apiDB)))
	Undistinct(client)
	Undistinct(trapClient)
	return &DB{Client: client, SQL: apiDB, Trap: trapClient, TrapSQL: trapDB, Dialect: dia, DSN: source}, nil
}

// openPool opens and pings a pool of at most conns connections.
func openPool(ctx context.Context, driver, source, dia string, conns int) (*sql.DB, error) {
	db, err := sql.Open(driver, source)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	if dia == dialect.Postgres {
		db.SetConnMaxIdleTime(5 * time.Minute)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return db, nil
}

// withParams names a PostgreSQL pool's connections (pg_stat_activity's application_name,
// unless the URL names them) and sets their statement_timeout; lib/pq sends parameters it
// does not know to the server as run-time settings. SQLite's source is returned as it is.
func withParams(source, dia, name string, timeout time.Duration) string {
	if dia != dialect.Postgres {
		return source
	}
	u, err := url.Parse(source)
	if err != nil { // parse accepted it already
		return source
	}
	q := u.Query()
	if q.Get("application_name") == "" {
		q.Set("application_name", name)
	}
	if timeout > 0 {
		q.Set("statement_timeout", strconv.FormatInt(max(1, timeout.Milliseconds()), 10))
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// analyzeNewIndexes gives statistics to the indexes a migration added to a SQLite file that
// has them for its other indexes (sqlite_stat1, from ANALYZE). Without, the planner takes the
// new index for a better one than the analyzed ones: adding (endpoint_id, status, created_at)
// to webhook deliveries made an endpoint's unfiltered list sort all its 290,000 deliveries
// (0.78 s) instead of walking (endpoint_id, created_at) (docs/benchmarks.md, "Reads at 1M
// sessions / 10M hits"). It reads one index per new index, once: a file never analyzed is
// left to the planner's defaults, which treat all indexes alike.
func analyzeNewIndexes(ctx context.Context, db *sql.DB) error {
	var analyzed int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'").Scan(&analyzed); err != nil {
		return fmt.Errorf("read statistics: %w", err)
	}
	if analyzed == 0 {
		return nil
	}
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'index'
		AND tbl_name IN (SELECT tbl FROM sqlite_stat1)
		AND name NOT IN (SELECT idx FROM sqlite_stat1 WHERE idx IS NOT NULL)`)
	if err != nil {
		return fmt.Errorf("read statistics: %w", err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		names = append(names, n)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, n := range names {
		if _, err := db.ExecContext(ctx, `ANALYZE "`+strings.ReplaceAll(n, `"`, `""`)+`"`); err != nil {
			return fmt.Errorf("analyze index %s: %w", n, err)
		}
	}
	return nil
}

// incrementalVacuum puts a SQLite file in auto_vacuum=INCREMENTAL mode, so retention can
// hand freed pages back (PRAGMA incremental_vacuum). The mode only takes on a file without
// tables, or through a VACUUM, which rewrites the whole file: Open sets it on a new file
// only (always set it on an existing one would rewrite it at every start), and an older
// file is converted once with force (flytrap vacuum). Not a DSN pragma: setting it on
// every new connection waits for the write lock, so reads would wait behind writers.
func incrementalVacuum(ctx context.Context, db *sql.DB, force bool) error {
	conn, err := db.Conn(ctx) // the pragma belongs to the connection that then vacuums
	if err != nil {
		return err
	}
	defer conn.Close()
	if !force {
		var tables int
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_master").Scan(&tables); err != nil {
			return fmt.Errorf("inspect the database: %w", err)
		}
		if tables > 0 {
			return nil
		}
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
		return fmt.Errorf("set auto_vacuum: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "VACUUM"); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	return nil
}

// Vacuum rewrites a SQLite file compactly, in auto_vacuum=INCREMENTAL mode. It holds the
// write lock throughout and needs free space about the file's size.
func (d *DB) Vacuum(ctx context.Context) error {
	if d.Dialect != dialect.SQLite {
		return fmt.Errorf("vacuum is for SQLite")
	}
	return incrementalVacuum(ctx, d.SQL, true)
}

// migrationLock is the PostgreSQL advisory lock key instances take around migrating,
// so several starting together on a new database do not race to create the same types.
const migrationLock = 0x466c797472617001 // "Flytrap" + 1

// migrateSchema creates or upgrades the schema, one migration at a time: per process
// (ent's migration writes package-level table descriptions) and per PostgreSQL database.
func migrateSchema(ctx context.Context, client *ent.Client, db *sql.DB, dia string, o Options) error {
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
		if !o.NoPartitions {
			// Before ent's migration, which then completes the partitioned table.
			if err := createPartitioned(ctx, conn, time.Now()); err != nil {
				return err
			}
		}
	}
	opts := []schema.MigrateOption{migrate.WithDropIndex(true)}
	if dia == dialect.Postgres {
		opts = append(opts, schema.WithDiffHook(keepPartitioning))
	}
	if err := client.Schema.Create(ctx, opts...); err != nil {
		return err
	}
	if dia == dialect.Postgres {
		// On the table, which sets its partitions too (those made later get it as they are made).
		for table := range noStatsColumns {
			if err := noColumnStats(ctx, db, table, table); err != nil {
				return err
			}
		}
		if err := setVacuumOptions(ctx, db); err != nil {
			return err
		}
	}
	// Outside ent's schema: nothing queries it but the readiness probe (WriteProbe).
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS flytrap_readiness (instance VARCHAR(64) PRIMARY KEY, checked_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("create the readiness table: %w", err)
	}
	// A database from before the counters gets them counted once (docs/counters.md).
	if _, err := tally.Backfill(ctx, client); err != nil {
		return fmt.Errorf("backfill the counters: %w", err)
	}
	if _, err := BackfillTrapSessions(ctx, client); err != nil {
		return fmt.Errorf("backfill trap_sessions: %w", err)
	}
	// And one from before the maintained campaigns gets its captured prompts grouped once.
	if _, err := tally.BackfillCampaigns(ctx, client); err != nil {
		return fmt.Errorf("backfill the campaigns: %w", err)
	}
	// And its hits with a JA4 (stored before the JA4 campaigns) grouped once.
	if _, err := tally.BackfillJa4Campaigns(ctx, client); err != nil {
		return fmt.Errorf("backfill the JA4 campaigns: %w", err)
	}
	// And one from before the event clock starts it at its newest event.
	if _, err := event.StartClock(ctx, client); err != nil {
		return fmt.Errorf("start the event clock: %w", err)
	}
	return nil
}

// BackfillTrapSessions fills trap_sessions from the stored sessions' traps_triggered, once
// (upgrade.Once), for a database stored before the table existed (the writer keeps it from
// then on). One statement: a row per trap of every session (WHERE true: SQLite's upsert after
// a SELECT with a join needs one).
func BackfillTrapSessions(ctx context.Context, c *ent.Client) (bool, error) {
	return upgrade.Once(ctx, c, "trap-sessions-1", func(ctx context.Context, tx *ent.Tx) error {
		q := `INSERT INTO trap_sessions (org_id, trap_id, session_id)
			SELECT s.org_id, t.value, s.id FROM sessions s, json_each(s.traps_triggered) t WHERE true
			ON CONFLICT (trap_id, session_id) DO NOTHING`
		if c.Dialect() == dialect.Postgres {
			q = `INSERT INTO trap_sessions (org_id, trap_id, session_id)
			SELECT s.org_id, t.value, s.id FROM sessions s, jsonb_array_elements_text(s.traps_triggered) t WHERE true
			ON CONFLICT (trap_id, session_id) DO NOTHING`
		}
		_, err := tx.ExecContext(ctx, q)
		return err
	})
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
	// On the trap listener's pool: readiness says whether hits can be written, and an API
	// caller holding every API connection must not make an orchestrator restart the instance.
	if _, err := d.TrapSQL.ExecContext(ctx, upsert, instance, now.UnixMilli()); err != nil {
		return err
	}
	if stale {
		if _, err := d.TrapSQL.ExecContext(ctx, del, now.Add(-24*time.Hour).UnixMilli()); err != nil {
			return err
		}
	}
	return nil
}

// Close closes both connection pools.
func (d *DB) Close() error { return errors.Join(d.Client.Close(), d.Trap.Close()) }

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
		// Reads through a memory map of the file's first 2 GiB (the driver's build caps it
		// there): pages come from the OS page cache, shared by every connection, instead of
		// a read() copy into each connection's 2 MB cache. Writes still go through write()
		// (WAL, checkpoints), so a full disk is an error, not a fault. docs/decisions.md,
		// "SQLite reads through mmap".
		q.Add("_pragma", "mmap_size(2147418112)")
		q.Set("_txlock", "immediate")
		return "sqlite", "file:" + path + "?" + q.Encode(), dialect.SQLite, nil
	}
}
