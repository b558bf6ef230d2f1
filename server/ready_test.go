package server_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"entgo.io/ent/dialect"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// holdWriteLock blocks writes to table as a stuck writer (or frozen disk) would, from
// a connection of the server's own pool, until the returned function is called.
// SQLite has one write lock for the whole file; PostgreSQL locks the table against
// writes but not reads.
func holdWriteLock(t *testing.T, env *ft.Env, table string) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := env.DB.SQL.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{"BEGIN IMMEDIATE"}
	if env.DB.Dialect == dialect.Postgres {
		stmts = []string{"BEGIN", "LOCK TABLE " + table + " IN EXCLUSIVE MODE"}
	}
	for _, s := range stmts {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			conn.Close()
			t.Fatalf("%s: %v", s, err)
		}
	}
	done := false
	release = func() {
		if !done {
			done = true
			_, _ = conn.ExecContext(ctx, "ROLLBACK")
			conn.Close()
		}
	}
	t.Cleanup(release)
	return release
}

// refuseWrites makes every write to the readiness table fail, as a full or read-only
// disk would; the returned function undoes it.
func refuseWrites(t *testing.T, db *sql.DB, dia string) (undo func()) {
	t.Helper()
	do, undoStmts := []string{
		`CREATE TRIGGER ready_fail_insert BEFORE INSERT ON flytrap_readiness BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`,
		`CREATE TRIGGER ready_fail_update BEFORE UPDATE ON flytrap_readiness BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`,
	}, []string{`DROP TRIGGER ready_fail_insert`, `DROP TRIGGER ready_fail_update`}
	if dia == dialect.Postgres {
		do = []string{`ALTER TABLE flytrap_readiness ADD CONSTRAINT ready_fail CHECK (false) NOT VALID`}
		undoStmts = []string{`ALTER TABLE flytrap_readiness DROP CONSTRAINT ready_fail`}
	}
	for _, s := range do {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return func() {
		for _, s := range undoStmts {
			if _, err := db.Exec(s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
}

// waitReady polls /readyz until it answers want (its result is cached for a second).
func waitReady(t *testing.T, env *ft.Env, want int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, body := env.Get("", "/readyz")
		if res.StatusCode == want {
			if want == http.StatusServiceUnavailable && !strings.Contains(string(body), `"database":"not accepting writes"`) {
				t.Fatalf("/readyz body %s", body)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz is %d %s, want %d", res.StatusCode, body, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReadinessChecksWrites: /readyz is 503 while the database refuses or cannot
// complete a write, though it still answers queries, and 200 again once it can.
func TestReadinessChecksWrites(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		waitReady(t, env, http.StatusOK)

		undo := refuseWrites(t, env.DB.SQL, env.DB.Dialect)
		if err := env.DB.Ping(t.Context()); err != nil {
			t.Fatalf("the database must still answer a ping: %v", err)
		}
		waitReady(t, env, http.StatusServiceUnavailable)
		undo()
		waitReady(t, env, http.StatusOK)

		release := holdWriteLock(t, env, "flytrap_readiness")
		waitReady(t, env, http.StatusServiceUnavailable)
		release()
		waitReady(t, env, http.StatusOK)
	})
}

// TestReadinessInstancesShareADatabase: two instances on one database each keep a row of their own.
func TestReadinessInstancesShareADatabase(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		one, two := ft.StartOn(t, dsn), ft.StartOn(t, dsn)
		waitReady(t, one, http.StatusOK)
		waitReady(t, two, http.StatusOK)
		var n int
		if err := one.DB.SQL.QueryRow(`SELECT count(*) FROM flytrap_readiness`).Scan(&n); err != nil || n != 2 {
			t.Fatalf("%d readiness rows (%v), want one per instance", n, err)
		}
	})
}

// TestRequestDeadline: a request stuck on a write that does not complete is answered
// at the request timeout with 503, in each API's error shape, instead of hanging.
func TestRequestDeadline(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, func(c *server.Config) { c.RequestTimeout = 500 * time.Millisecond })
		a := env.Tenant("acme")
		holdWriteLock(t, env, "traps")

		req, _ := http.NewRequest(http.MethodPost, env.HTTP.URL+"/dashboard/api/traps", strings.NewReader(`{"name":"stuck","type":"api"}`))
		req.Header.Set("Authorization", "Bearer "+a.ReadWrite)
		req.Header.Set("Content-Type", "application/json")
		res, err := env.HTTP.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var rest struct {
			Success *bool
			Error   string
		}
		err = json.NewDecoder(res.Body).Decode(&rest)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusServiceUnavailable || rest.Success == nil || *rest.Success || !strings.Contains(rest.Error, "request-timeout") {
			t.Fatalf("REST: %d %+v %v, want 503 naming request-timeout", res.StatusCode, rest, err)
		}

		r := env.GraphQL(a.ReadWrite, `mutation { createTrap(input:{name:"stuck", type: api}) { id } }`, nil)
		if r.Status != http.StatusServiceUnavailable || r.Code() != server.CodeTimeout || r.Data != nil {
			t.Fatalf("GraphQL: %d %s, want 503 with code %s", r.Status, r.Raw, server.CodeTimeout)
		}
		// Reads still work meanwhile.
		if r := env.GraphQL(a.ReadOnly, `{ organization { id } }`, nil); r.Status != http.StatusOK || len(r.Errors) > 0 {
			t.Fatalf("a read while writes are stuck: %d %s", r.Status, r.Raw)
		}
	})
}
