package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"entgo.io/ent/dialect"

	"github.com/flytrap/flytrap/ent/crawlerrangelist"
	"github.com/flytrap/flytrap/ent/privacy"
)

// Stats describes what the database holds, for an operator watching its growth.
// Its JSON (flytrap stats --json) is snake_case, as the API's.
type Stats struct {
	Dialect string `json:"dialect"`
	// SizeBytes is the database's size: SQLite's file plus its write-ahead log,
	// PostgreSQL's pg_database_size.
	SizeBytes int64 `json:"size_bytes"`
	// FreeBytes is the free space on the SQLite file's file system (-1: unknown, or PostgreSQL,
	// whose disk is the server's).
	FreeBytes int64 `json:"free_bytes"`
	// Path is the SQLite file.
	Path   string       `json:"path"`
	Tables []TableStats `json:"tables"`
	// Exact says the row counts were counted, not estimated.
	Exact bool `json:"exact"`
	// CrawlerRanges are the crawler range lists fetched from their operators and stored
	// (crawler.Refresher), one per list attempted; a list never fetched good has no prefixes.
	CrawlerRanges []CrawlerRangeStats `json:"crawler_ranges"`
}

// CrawlerRangeStats is one stored crawler range list.
type CrawlerRangeStats struct {
	Name      string     `json:"name"`
	URL       string     `json:"url"`
	Prefixes  int        `json:"prefixes"`
	ListTime  *time.Time `json:"list_time"`  // the document's own date
	FetchedAt *time.Time `json:"fetched_at"` // the last good fetch; nil: never
	CheckedAt time.Time  `json:"checked_at"` // the last attempt
	LastError string     `json:"last_error"` // of the last attempt
}

// TableStats is one table's figures.
type TableStats struct {
	Name string `json:"name"`
	Rows int64  `json:"rows"`
	// SizeBytes is the table with its indexes (PostgreSQL; on SQLite only when counted exactly,
	// since it reads every page; -1 when not measured).
	SizeBytes int64 `json:"size_bytes"`
	// Oldest is the time of the table's oldest row (nil: empty, or a table without a time).
	Oldest *time.Time `json:"oldest"`
}

// statTables are the tables that grow with traffic, with the column that dates a row.
// Their ids are ULIDs, so the first id is the oldest row: an index lookup.
var statTables = []struct{ name, timeCol string }{
	{"hits", "received_at"},
	{"sessions", "first_seen"},
	{"signals", "created_at"},
	{"prompts", "created_at"},
	{"events", "created_at"},
	{"webhook_deliveries", "created_at"},
	{"traps", "created_at"},
	{"api_keys", "created_at"},
	{"organizations", "created_at"},
}

// Stats measures the database. With exact, rows are counted (COUNT(*): seconds on tens of
// millions of rows); without, they are estimated cheaply (PostgreSQL's statistics, SQLite's
// rowid span, which retention keeps close since it deletes the oldest rows).
func (d *DB) Stats(ctx context.Context, exact bool) (*Stats, error) {
	st := &Stats{Dialect: d.Dialect, FreeBytes: -1, Exact: exact}
	var err error
	if d.Dialect == dialect.Postgres {
		if err := d.SQL.QueryRowContext(ctx, "SELECT pg_database_size(current_database())").Scan(&st.SizeBytes); err != nil {
			return nil, fmt.Errorf("database size: %w", err)
		}
	} else {
		st.Path = d.Path()
		var pages, size int64
		if err := d.SQL.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
			return nil, fmt.Errorf("database size: %w", err)
		}
		if err := d.SQL.QueryRowContext(ctx, "PRAGMA page_size").Scan(&size); err != nil {
			return nil, fmt.Errorf("database size: %w", err)
		}
		st.SizeBytes = pages * size
		if fi, err := os.Stat(st.Path + "-wal"); err == nil {
			st.SizeBytes += fi.Size()
		}
		if free, err := FreeSpace(st.Path); err == nil {
			st.FreeBytes = free
		}
	}
	var sizes map[string]int64
	if exact && d.Dialect == dialect.SQLite {
		// dbstat reads every page: the exact size of each table with its indexes.
		if sizes, err = d.sqliteSizes(ctx); err != nil {
			return nil, err
		}
	}
	for _, t := range statTables {
		ts := TableStats{Name: t.name, SizeBytes: -1}
		if n, ok := sizes[t.name]; ok {
			ts.SizeBytes = n
		}
		if ts.Rows, err = d.rows(ctx, t.name, exact); err != nil {
			return nil, fmt.Errorf("count %s: %w", t.name, err)
		}
		if d.Dialect == dialect.Postgres {
			// A partitioned table (hits, events) has no storage of its own: its partitions do.
			if err := d.SQL.QueryRowContext(ctx, `SELECT pg_total_relation_size($1::regclass) + COALESCE((SELECT SUM(pg_total_relation_size(relid))
				FROM pg_partition_tree($1::regclass) WHERE relid <> $1::regclass), 0)::bigint`, t.name).Scan(&ts.SizeBytes); err != nil {
				return nil, fmt.Errorf("size of %s: %w", t.name, err)
			}
		}
		var at time.Time
		err = d.SQL.QueryRowContext(ctx, "SELECT "+t.timeCol+" FROM "+t.name+" ORDER BY id LIMIT 1").Scan(&at)
		switch {
		case err == nil:
			at = at.UTC()
			ts.Oldest = &at
		case !isNoRows(err):
			return nil, fmt.Errorf("oldest of %s: %w", t.name, err)
		}
		st.Tables = append(st.Tables, ts)
	}
	lists, err := d.Client.CrawlerRangeList.Query().Order(crawlerrangelist.ByID()).All(privacy.DecisionContext(ctx, privacy.Allow))
	if err != nil {
		return nil, fmt.Errorf("crawler range lists: %w", err)
	}
	for _, l := range lists {
		cs := CrawlerRangeStats{Name: l.ID, URL: l.URL, Prefixes: len(l.Prefixes), ListTime: l.ListTime,
			FetchedAt: l.FetchedAt, CheckedAt: l.CheckedAt.UTC(), LastError: l.LastError}
		st.CrawlerRanges = append(st.CrawlerRanges, cs)
	}
	return st, nil
}

func (d *DB) rows(ctx context.Context, table string, exact bool) (int64, error) {
	var n int64
	switch {
	case exact:
		err := d.SQL.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n)
		return n, err
	case d.Dialect == dialect.Postgres:
		// The planner's estimate (autovacuum's ANALYZE keeps it near); -1 before the first one.
		// A partitioned table's estimate is its partitions' (leaves of pg_partition_tree, none for a plain table).
		err := d.SQL.QueryRowContext(ctx, `SELECT COALESCE(
			(SELECT SUM(GREATEST(c.reltuples, 0)) FROM pg_partition_tree($1::regclass) p JOIN pg_class c ON c.oid = p.relid WHERE p.isleaf),
			(SELECT GREATEST(reltuples, 0) FROM pg_class WHERE oid = $1::regclass))::bigint`, table).Scan(&n)
		return n, err
	default:
		err := d.SQL.QueryRowContext(ctx, "SELECT COALESCE(MAX(rowid) - MIN(rowid) + 1, 0) FROM "+table).Scan(&n)
		return n, err
	}
}

func (d *DB) sqliteSizes(ctx context.Context) (map[string]int64, error) {
	rows, err := d.SQL.QueryContext(ctx, `SELECT m.tbl_name, SUM(s.pgsize) FROM dbstat s JOIN sqlite_master m ON m.name = s.name GROUP BY m.tbl_name`)
	if err != nil {
		return nil, fmt.Errorf("table sizes: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return nil, err
		}
		out[name] = n
	}
	return out, rows.Err()
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// Path is the SQLite database's file ("" on PostgreSQL).
func (d *DB) Path() string {
	if d.Dialect != dialect.SQLite {
		return ""
	}
	p := strings.TrimPrefix(d.DSN, "file:")
	p, _, _ = strings.Cut(p, "?")
	return p
}

// ErrNoDiskCheck: free space is not known on this platform.
var ErrNoDiskCheck = errors.New("free disk space is not known on this platform")
