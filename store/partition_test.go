package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/store"
)

// An operator may range-partition hits by time on PostgreSQL (docs/operations.md): ent's
// migration then adds its columns, indexes and foreign keys to the partitioned table, keeps
// the partitioning, and a later start changes nothing; hits land in their partitions, and a
// whole old partition can be dropped.
func TestPartitionedHitsSurviveMigration(t *testing.T) {
	dsn := ft.PostgresDSN(t)
	ctx := context.Background()
	raw, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{
		`CREATE TABLE hits (id varchar NOT NULL, received_at timestamptz NOT NULL, PRIMARY KEY (id, received_at)) PARTITION BY RANGE (received_at)`,
		`CREATE TABLE hits_2026_10 PARTITION OF hits FOR VALUES FROM ('2026-10-01') TO ('2026-11-01')`,
		`CREATE TABLE hits_2026_11 PARTITION OF hits FOR VALUES FROM ('2026-11-01') TO ('2026-12-01')`,
		`CREATE TABLE hits_default PARTITION OF hits DEFAULT`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for range 2 { // the first start creates the rest of the schema; the second finds nothing to do
		db, err := store.Open(ctx, dsn)
		if err != nil {
			t.Fatalf("open over a partitioned hits table: %v", err)
		}
		db.Close()
	}
	var strategy string
	if err := raw.QueryRow(`SELECT partstrat FROM pg_partitioned_table WHERE partrelid = 'hits'::regclass`).Scan(&strategy); err != nil || strategy != "r" {
		t.Fatalf("hits is no longer range-partitioned: %q %v", strategy, err)
	}
	var indexes, fks int
	raw.QueryRow(`SELECT COUNT(*) FROM pg_indexes WHERE tablename = 'hits' AND indexname LIKE 'hit_%'`).Scan(&indexes)
	raw.QueryRow(`SELECT COUNT(*) FROM pg_constraint WHERE conrelid = 'hits'::regclass AND contype = 'f'`).Scan(&fks)
	if indexes == 0 || fks != 2 {
		t.Fatalf("ent's indexes (%d) or foreign keys (%d) are missing on the partitioned table", indexes, fks)
	}

	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sys := ft.System()
	org := db.Client.Organization.Create().SetName("acme").SaveX(sys)
	ses := db.Client.Session.Create().SetOrgID(org.ID).SetSourceIP("203.0.113.9").SaveX(sys)
	for _, at := range []time.Time{time.Date(2026, 10, 5, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC)} {
		db.Client.Hit.Create().SetOrgID(org.ID).SetSessionID(ses.ID).SetMethod("GET").SetPath("/").
			SetHeaders(map[string][]string{}).SetSourceIP("203.0.113.9").SetReceivedAt(at).ExecX(sys)
	}
	count := func(table string) (n int) {
		raw.QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n)
		return n
	}
	if count("hits_2026_10") != 1 || count("hits_2026_11") != 1 || count("hits_default") != 0 {
		t.Fatal("hits did not land in their partitions")
	}
	if _, err := raw.Exec(`DROP TABLE hits_2026_10`); err != nil { // retention by partition, by hand
		t.Fatal(err)
	}
	if n := db.Client.Hit.Query().CountX(sys); n != 1 {
		t.Fatalf("%d hits after dropping October, want 1", n)
	}
}

// hits.session_id keeps no statistics on any partition, those made after the start too: with a
// session that fills a day in its most-common values, PostgreSQL walked that partition's primary
// key for the session's hits (docs/benchmarks.md, reads at 1M, run 6).
func TestHitsSessionIDHasNoStatistics(t *testing.T) {
	dsn := ft.PostgresDSN(t)
	ctx := context.Background()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	targets := func() map[string]int {
		rows, err := db.SQL.QueryContext(ctx, `SELECT c.relname, a.attstattarget FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
			JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'session_id' WHERE i.inhparent = 'hits'::regclass
			UNION ALL SELECT 'hits', attstattarget FROM pg_attribute WHERE attrelid = 'hits'::regclass AND attname = 'session_id'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]int{}
		for rows.Next() {
			var name string
			var n sql.NullInt64
			if err := rows.Scan(&name, &n); err != nil {
				t.Fatal(err)
			}
			out[name] = int(n.Int64)
			if !n.Valid {
				out[name] = -1
			}
		}
		return out
	}
	before := targets()
	// Partitions of days to come, made as the daily maintenance makes them.
	made, err := db.EnsurePartitions(ctx, time.Now().AddDate(0, 0, 30))
	if err != nil || len(made) == 0 {
		t.Fatalf("no partition made: %v %v", made, err)
	}
	after := targets()
	if len(after) <= len(before) || len(before) < 2 {
		t.Fatalf("partitions: %d before, %d after", len(before), len(after))
	}
	for name, n := range after {
		if n != 0 {
			t.Errorf("%s.session_id: statistics target %d, want 0", name, n)
		}
	}
}
