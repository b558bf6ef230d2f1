package main

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// serve with FLYTRAP_PG_PARTITIONS=false makes plain hits and events tables on a new PostgreSQL
// database; flytrap partition-hits and partition-events, with the service stopped, partition
// them by day once.
// On SQLite the command says it is for PostgreSQL.
func TestPartitionCommands(t *testing.T) {
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

	// The same for events, with its events and their positions kept.
	if _, err := raw.Exec(`INSERT INTO organizations (id, name, created_at) VALUES ('org_x', 'x', now())`); err != nil {
		t.Fatal(err)
	}
	for i, age := range []string{"40 days", "3 days", "1 hour"} {
		if _, err := raw.Exec(`INSERT INTO events (id, org_id, position, seq, type, api_version, created_at, data)
			VALUES ($1, 'org_x', $2, $2, 'trap.created', '2026-11-22', now() - $3::interval, '{}')`, "evt_"+age, i+1, age); err != nil {
			t.Fatal(err)
		}
	}
	if out := mustCLI(t, noEnv, "partition-events", "--db", dsn); !strings.Contains(out, "events is partitioned by day: 3 rows copied") {
		t.Fatalf("partition-events: %q", out)
	}
	var evKind string
	raw.QueryRow(`SELECT relkind FROM pg_class WHERE oid = 'events'::regclass`).Scan(&evKind)
	var inDefault, total int
	raw.QueryRow(`SELECT COUNT(*) FROM events_default`).Scan(&inDefault)
	raw.QueryRow(`SELECT COUNT(*) FROM events WHERE org_id = 'org_x' AND position > 1`).Scan(&total)
	if evKind != "p" || inDefault != 1 || total != 2 {
		t.Fatalf("after partition-events: events %q, %d in the default partition (want the 40 days old one), %d after position 1", evKind, inDefault, total)
	}
}
