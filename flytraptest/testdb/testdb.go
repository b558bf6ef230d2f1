// Package testdb gives tests fresh databases: a SQLite file always, a PostgreSQL
// database of their own too when FLYTRAP_TEST_POSTGRES_URL is set. It depends on
// nothing of Flytrap, so the tests of any package can use it.
package testdb

import (
	"crypto/rand"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/lib/pq"
)

// PostgresEnv names the variable holding an admin URL of a PostgreSQL server for tests.
const PostgresEnv = "FLYTRAP_TEST_POSTGRES_URL"

// Backend is a database a test runs on.
type Backend struct {
	Name string
	// DSN returns a fresh, empty database for t, dropped when t ends.
	DSN func(t testing.TB) string
}

// Backends lists SQLite, and PostgreSQL when FLYTRAP_TEST_POSTGRES_URL is set.
func Backends() []Backend {
	b := []Backend{{Name: "sqlite", DSN: SQLiteDSN}}
	if os.Getenv(PostgresEnv) != "" {
		b = append(b, Backend{Name: "postgres", DSN: PostgresDSN})
	}
	return b
}

// ForEachBackend runs f as a subtest on every backend.
func ForEachBackend(t *testing.T, f func(t *testing.T, b Backend)) {
	t.Helper()
	if os.Getenv(PostgresEnv) == "" {
		note(GroupPostgres, postgresHow, t.Name(), true)
	}
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) { f(t, b) })
	}
}

// SQLiteDSN returns a new SQLite file in t's temporary directory.
func SQLiteDSN(t testing.TB) string {
	return filepath.Join(t.TempDir(), "flytrap.db")
}

// PostgresDSN creates a database of its own for t on the test server and drops it afterwards.
// It skips t with a clear message when no server is configured.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(PostgresEnv)
	if admin == "" {
		Skip(t, GroupPostgres, postgresHow, PostgresEnv+" is not set: skipping the PostgreSQL run (CI sets it)")
	}
	name := "flytrap_test_" + strings.ToLower(rand.Text()[:12])
	db, err := sql.Open("postgres", admin)
	if err != nil {
		t.Fatalf("open %s: %v", PostgresEnv, err)
	}
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		db.Close()
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		defer db.Close()
		if _, err := db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Logf("drop test database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("parse %s: %v", PostgresEnv, err)
	}
	u.Path = "/" + name
	return u.String()
}
