package store_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/store"
)

// TestReopen starts twice on one database: the second start upgrades nothing and keeps the data.
func TestReopen(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		db, err := store.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		org := db.Client.Organization.Create().SetName("acme").SaveX(ft.System())
		db.Close()

		db, err = store.Open(t.Context(), dsn)
		if err != nil {
			t.Fatalf("second open: %v", err)
		}
		defer db.Close()
		if _, err := db.Client.Organization.Get(ft.System(), org.ID); err != nil {
			t.Fatalf("organization lost across restart: %v", err)
		}
		if err := db.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestOpenErrors(t *testing.T) {
	for _, dsn := range []string{"", "sqlite:", "postgres://127.0.0.1:1/nope?sslmode=disable&connect_timeout=1", t.TempDir() + "/missing-dir/x.db"} {
		if db, err := store.Open(t.Context(), dsn); err == nil {
			db.Close()
			t.Errorf("Open(%q) succeeded", dsn)
		} else if strings.Contains(err.Error(), "password") {
			t.Errorf("error leaks credentials: %v", err)
		}
	}
}

func TestSQLitePrefix(t *testing.T) {
	db, err := store.Open(t.Context(), "sqlite:"+t.TempDir()+"/x.db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Dialect != "sqlite3" {
		t.Fatalf("dialect %q", db.Dialect)
	}
}

// TestConcurrentStartsMigrateOnce starts several processes on one new PostgreSQL
// database at once: the advisory lock lets each migrate in turn, and all succeed.
func TestConcurrentStartsMigrateOnce(t *testing.T) {
	if dsn := os.Getenv("FLYTRAP_TEST_MIGRATE_DSN"); dsn != "" {
		db, err := store.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		return
	}
	dsn := ft.PostgresDSN(t)
	const procs = 4
	errs := make(chan error, procs)
	for range procs {
		go func() {
			cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentStartsMigrateOnce$", "-test.count=1")
			cmd.Env = append(os.Environ(), "FLYTRAP_TEST_MIGRATE_DSN="+dsn)
			out, err := cmd.CombinedOutput()
			if err != nil {
				err = fmt.Errorf("%w: %s", err, out)
			}
			errs <- err
		}()
	}
	for range procs {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestNewIndexGetsStatistics: an index without statistics in a SQLite file whose other indexes
// have them (a migration added it) gets them at the next start, so the planner does not take it
// for better than it is.
func TestNewIndexGetsStatistics(t *testing.T) {
	dsn := ft.SQLiteDSN(t)
	db, err := store.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ft.System()
	org := db.Client.Organization.Create().SetName("acme").SaveX(ctx)
	for i := range 5 {
		db.Client.WebhookEndpoint.Create().SetOrgID(org.ID).SetURL(fmt.Sprintf("https://example.com/%d", i)).SetSecret("x").SaveX(ctx)
	}
	const idx = "webhookendpoint_org_id_active"
	stat := func() int {
		var n int
		if err := db.SQL.QueryRow("SELECT COUNT(*) FROM sqlite_stat1 WHERE idx = ?", idx).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := db.SQL.Exec("ANALYZE"); err != nil {
		t.Fatal(err)
	}
	if stat() != 1 {
		t.Fatalf("ANALYZE left %s without statistics", idx)
	}
	if _, err := db.SQL.Exec("DELETE FROM sqlite_stat1 WHERE idx = ?", idx); err != nil { // as if a migration had just added it
		t.Fatal(err)
	}
	db.Close()
	db, err = store.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if stat() != 1 {
		t.Fatalf("%s has no statistics after a restart", idx)
	}
}
