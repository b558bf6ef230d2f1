package main

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/store"
)

// flytrap stats reports the size, and per table the rows (counted or estimated) and the oldest row.
func TestStats(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		createOrgCLI(t, dsn, "Acme")
		createOrgCLI(t, dsn, "Other")
		out := mustCLI(t, noEnv, "stats", "--db", dsn)
		for _, want := range []string{"size", "hits", "webhook_deliveries", "organizations"} {
			if !strings.Contains(out, want) {
				t.Fatalf("stats lacks %q:\n%s", want, out)
			}
		}
		raw := mustCLI(t, noEnv, "stats", "--json", "--db", dsn)
		// The API's snake_case, not Go's field names.
		for _, key := range []string{`"size_bytes":`, `"free_bytes":`, `"tables":`, `"exact":`, `"rows":`, `"oldest":`, `"name":`} {
			if !strings.Contains(raw, key) {
				t.Fatalf("stats --json lacks %s:\n%s", key, raw)
			}
		}
		if strings.Contains(raw, `"SizeBytes"`) || strings.Contains(raw, `"Tables"`) {
			t.Fatalf("stats --json has Go's field names:\n%s", raw)
		}
		var st store.Stats
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			t.Fatal(err)
		}
		if st.SizeBytes <= 0 || !st.Exact {
			t.Fatalf("stats: %+v", st)
		}
		for _, tb := range st.Tables {
			switch tb.Name {
			case "organizations":
				if tb.Rows != 2 || tb.Oldest == nil {
					t.Fatalf("organizations: %+v", tb)
				}
			case "hits":
				if tb.Rows != 0 || tb.Oldest != nil {
					t.Fatalf("hits: %+v", tb)
				}
			}
		}
		if b.Name == "sqlite" && st.FreeBytes <= 0 {
			t.Fatalf("SQLite stats has no free disk space: %+v", st)
		}
		mustCLI(t, noEnv, "stats", "--estimate", "--db", dsn)
	})
}

// A SQLite file made before incremental auto-vacuum keeps working, and flytrap vacuum converts it once.
func TestVacuumConvertsAnOlderFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	// What an older release left: tables in a file without auto-vacuum.
	if _, err := raw.Exec("CREATE TABLE legacy (a INTEGER)"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	createOrgCLI(t, path, "Acme")
	mode := func() int {
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var m int
		if err := db.QueryRow("PRAGMA auto_vacuum").Scan(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := mode(); m != 0 {
		t.Fatalf("an older file's auto_vacuum changed without VACUUM: %d", m)
	}
	if out := mustCLI(t, noEnv, "vacuum", "--db", path); !strings.Contains(out, "auto_vacuum=INCREMENTAL") {
		t.Fatalf("vacuum printed %q", out)
	}
	if m := mode(); m != 2 {
		t.Fatalf("after flytrap vacuum auto_vacuum is %d, want 2", m)
	}
}

// flytrap backup copies a SQLite database the service has open into a file flytrap opens.
func TestBackup(t *testing.T) {
	dsn := ft.SQLiteDSN(t)
	org := createOrgCLI(t, dsn, "Acme")
	to := filepath.Join(t.TempDir(), "copy.db")
	mustCLI(t, noEnv, "backup", "--db", dsn, "--to", to)
	if out := mustCLI(t, noEnv, "orgs", "list", "--db", to); !strings.Contains(out, org) {
		t.Fatalf("the copy lacks the organization:\n%s", out)
	}
	failCLI(t, noEnv, "backup", "--db", dsn, "--to", to) // never overwrites
}
