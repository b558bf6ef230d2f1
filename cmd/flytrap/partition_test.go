package main

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// serve with FLYTRAP_PG_PARTITIONS=false makes a plain hits table on a new PostgreSQL
// database; flytrap partition-hits, with the service stopped, partitions it by day once.
// On SQLite the command says it is for PostgreSQL.
func TestPartitionHitsCommand(t *testing.T) {
	if err := failCLI(t, noEnv, "partition-hits", "--db", filepath.Join(t.TempDir(), "f.db")); !strings.Contains(err.Error(), "PostgreSQL") {
		t.Fatalf("on SQLite: %v", err)
	}
	dsn := ft.PostgresDSN(t)
	s := serveReady(t, fakeEnv("FLYTRAP_DB", dsn, "FLYTRAP_API_ADDR", "127.0.0.1:0", "FLYTRAP_PG_PARTITIONS", "false"))
	s.cancel()
	select {
	case err := <-s.done:
		s.done <- err // for the cleanup
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
	raw, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	kind := func() (k string) {
		raw.QueryRow(`SELECT relkind FROM pg_class WHERE oid = 'hits'::regclass`).Scan(&k)
		return k
	}
	if k := kind(); k != "r" {
		t.Fatalf("serve with FLYTRAP_PG_PARTITIONS=false made hits %q, want a plain table", k)
	}
	if out := mustCLI(t, noEnv, "partition-hits", "--db", dsn, "--retain-hits", "10d"); !strings.Contains(out, "partitioned by day: 0 rows copied") {
		t.Fatalf("partition-hits: %q", out)
	}
	if k := kind(); k != "p" {
		t.Fatalf("hits is %q after partition-hits", k)
	}
	var parts int
	raw.QueryRow(`SELECT COUNT(*) FROM pg_inherits WHERE inhparent = 'hits'::regclass`).Scan(&parts)
	if parts != 10+8+1 {
		t.Fatalf("%d partitions, want 10 days back, today and 7 ahead, default", parts)
	}
	if out := mustCLI(t, noEnv, "partition-hits", "--db", dsn); !strings.Contains(out, "nothing to do") {
		t.Fatalf("a second partition-hits: %q", out)
	}
	if err := failCLI(t, noEnv, "partition-hits", "--db", dsn, "--retain-hits", "0"); !strings.Contains(err.Error(), "forever") {
		t.Fatalf("--retain-hits 0: %v", err)
	}
}
