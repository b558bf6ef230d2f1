package server_test

import (
	"io"
	"net/http"
	"testing"

	"entgo.io/ent/dialect"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// When the database refuses writes as a full disk does, the trap listener answers hits
// 503 (nothing acknowledged that was not stored), and every read keeps answering.
func TestReadsWhileWritesFail(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		env.CreateTrap(a.ReadWrite, "docs", "page")
		path := ft.Dig(env.MustGraphQL(a.ReadOnly, `{ traps(first: 1) { edges { node { path } } } }`, nil), "traps", "edges", 0, "node", "path").(string)
		get := func() int {
			res, err := http.Get(env.Trap.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			return res.StatusCode
		}
		if st := get(); st != http.StatusOK {
			t.Fatalf("a hit before the disk fills: %d", st)
		}
		stmts := []string{
			`CREATE TRIGGER full_hits BEFORE INSERT ON hits BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`,
			`CREATE TRIGGER full_traps BEFORE INSERT ON traps BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`,
		}
		if env.DB.Dialect == dialect.Postgres {
			stmts = []string{`ALTER TABLE hits ADD CONSTRAINT full_hits CHECK (false) NOT VALID`, `ALTER TABLE traps ADD CONSTRAINT full_traps CHECK (false) NOT VALID`}
		}
		for _, s := range stmts {
			if _, err := env.DB.SQL.Exec(s); err != nil {
				t.Fatal(err)
			}
		}
		if st := get(); st != http.StatusServiceUnavailable {
			t.Fatalf("a hit that cannot be stored: %d, want 503", st)
		}
		if r := env.GraphQL(a.ReadWrite, `mutation { createTrap(input:{name:"x", type: api}) { id } }`, nil); len(r.Errors) == 0 {
			t.Fatalf("a write on a full disk succeeded: %s", r.Raw)
		}
		for _, p := range []string{"/dashboard/api/sessions", "/dashboard/api/traps", "/dashboard/api/analytics/overview", "/api/v1/events"} {
			if res, body := env.Get(a.ReadOnly, p); res.StatusCode != http.StatusOK {
				t.Errorf("GET %s while writes fail: %d %s", p, res.StatusCode, body)
			}
		}
		if r := env.GraphQL(a.Admin, `{ organization { id } storage { sizeBytes } sessions(first: 5) { edges { node { id hitCount } } } }`, nil); r.Status != http.StatusOK || len(r.Errors) > 0 {
			t.Errorf("GraphQL reads while writes fail: %d %s", r.Status, r.Raw)
		}
	})
}
