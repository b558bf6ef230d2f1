package server_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/flytrap/flytrap/ent/hit"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// visitTrap requests path on the trap listener (with a client timeout well under the
// database waits the tests stage, so a request stuck behind them fails) and returns its status.
func visitTrap(t *testing.T, env *ft.Env, path, host string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, env.Trap.URL+path, nil)
	if host != "" {
		req.Host = host
	}
	c := &http.Client{Timeout: 4 * time.Second}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// hitsOn counts the stored hits of a trap path, through the trap listener's own pool.
func hitsOn(t *testing.T, env *ft.Env, path string) int {
	t.Helper()
	n, err := env.DB.Trap.Hit.Query().Where(hit.Path(path)).Count(ft.System())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// An API caller that holds every connection of the API's pool (a flood of expensive
// queries does exactly that) takes none of the trap listener's: traps keep answering and
// recording, and readiness stays green, while the API itself answers 503 at its deadline.
func TestTrapListenerKeepsItsConnectionsWhenTheAPIHoldsAll(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, func(c *server.Config) {
			c.DBAPIConns = 2
			c.RequestTimeout = time.Second
		})
		a := env.Tenant("a")
		createTrap(t, env, a.ReadWrite, map[string]any{"name": "wiki", "type": "page", "path": "/held/wiki"})

		ctx := context.Background()
		var held []*sql.Conn
		for range 2 {
			c, err := env.DB.SQL.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		// The API has no connection left: its request waits, and its deadline ends the wait.
		r := env.GraphQL(a.ReadOnly, `{ traps(first: 5) { totalCount } }`, nil)
		if r.Code() != server.CodeTimeout {
			t.Fatalf("API request with its pool held: %s", r.Raw)
		}
		for i := range 40 {
			if s := visitTrap(t, env, "/held/wiki", ""); s != http.StatusOK {
				t.Fatalf("trap request %d with the API's pool held: %d", i, s)
			}
		}
		if n := hitsOn(t, env, "/held/wiki"); n != 40 {
			t.Fatalf("%d hits stored of 40 answered", n)
		}
		res, body := rawRequest(t, env, http.MethodGet, "/readyz", nil, nil)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("/readyz with the API's pool held: %d %s", res.StatusCode, body)
		}
	})
}

// A request's deadline reaches the database: on PostgreSQL every statement of the API's
// pool carries a statement_timeout under --request-timeout (the trap listener's none), and
// a canceled statement is canceled in the server at once, freeing its connection; on
// SQLite a canceled context interrupts the statement.
func TestDeadlinesReachTheDatabase(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, func(c *server.Config) { c.RequestTimeout = time.Second })
		ctx := context.Background()
		if b.Name == "postgres" {
			var api, trap string
			env.DB.SQL.QueryRowContext(ctx, "SHOW statement_timeout").Scan(&api)
			env.DB.TrapSQL.QueryRowContext(ctx, "SHOW statement_timeout").Scan(&trap)
			if api != "900ms" || trap != "0" {
				t.Fatalf("statement_timeout: API pool %q, trap pool %q", api, trap)
			}
			_, err := env.DB.SQL.ExecContext(ctx, "SELECT pg_sleep(5)")
			var pe *pq.Error
			if !errors.As(err, &pe) || pe.Code != "57014" {
				t.Fatalf("a 5 s statement on the API's pool: %v", err)
			}
			// Canceled by its context: gone from the server, not left running.
			cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			_, err = env.DB.SQL.ExecContext(cctx, "SELECT pg_sleep(0.8) /* canceled */")
			cancel()
			if err == nil {
				t.Fatal("a canceled statement succeeded")
			}
			deadline := time.Now().Add(3 * time.Second)
			for {
				var n int
				if err := env.DB.TrapSQL.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
					WHERE state = 'active' AND query LIKE '%/* canceled */%' AND query NOT LIKE '%pg_stat_activity%'`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the canceled statement still runs in the server")
				}
				time.Sleep(20 * time.Millisecond)
			}
			return
		}
		// SQLite: a statement that would count for minutes ends with its context.
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		var n int64
		err := env.DB.SQL.QueryRowContext(cctx, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5000000000) SELECT count(*) FROM c`).Scan(&n)
		if err == nil {
			t.Fatalf("a canceled count finished: %d", n)
		}
		if err := env.DB.SQL.QueryRowContext(ctx, "SELECT 1").Scan(&n); err != nil {
			t.Fatalf("the pool after an interrupted statement: %v", err)
		}
	})
}

// The trap listener never waits on the database to route: with the sites table locked
// (a migration, a long transaction, a stuck replica), routes reload in the background and
// time out while the last good ones keep serving; hits are still recorded.
func TestRoutesServeWhileTheirTablesAreLocked(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		if b.Name != "postgres" {
			t.Skip("SQLite's WAL lets reads through any write lock: nothing to wait on")
		}
		env := ft.Start(t, b, func(c *server.Config) { c.Trap.RoutesTimeout = 500 * time.Millisecond })
		a := env.Tenant("a")
		createTrap(t, env, a.ReadWrite, map[string]any{"name": "wiki", "type": "page", "path": "/locked/wiki"})

		locker, err := sql.Open("postgres", env.DB.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer locker.Close()
		ctx := context.Background()
		tx, err := locker.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, "LOCK TABLE sites IN ACCESS EXCLUSIVE MODE"); err != nil {
			t.Fatal(err)
		}
		env.Server.Engine().InvalidateRoutes() // another instance changed something
		var wg sync.WaitGroup
		codes := make([]int, 24)
		for i := range codes {
			wg.Go(func() { codes[i] = visitTrap(t, env, "/locked/wiki", "") })
		}
		wg.Wait()
		for i, c := range codes {
			if c != http.StatusOK {
				t.Fatalf("request %d with sites locked: %d", i, c)
			}
		}
		if n := hitsOn(t, env, "/locked/wiki"); n != len(codes) {
			t.Fatalf("%d hits stored of %d answered", n, len(codes))
		}
		tx.Rollback()
	})
}

// A host-less site that another organization creates later (flytrap orgs create, a
// tenant's createSite) does not take the default site's visitors: the first organization's
// traps keep answering and being recorded on any host.
func TestALaterHostlessSiteKeepsTheDefaultSite(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("first")
		createTrap(t, env, a.ReadWrite, map[string]any{"name": "wiki", "type": "page", "path": "/first/wiki"})
		if s := visitTrap(t, env, "/first/wiki", "anything.example"); s != http.StatusOK {
			t.Fatalf("alone: %d", s)
		}
		later := env.Tenant("later") // its default site has no host either
		createTrap(t, env, later.ReadWrite, map[string]any{"name": "docs", "type": "page", "path": "/later/docs"})
		for _, host := range []string{"", "anything.example", "127.0.0.1"} {
			if s := visitTrap(t, env, "/first/wiki", host); s != http.StatusOK {
				t.Fatalf("host %q after a second host-less site: %d", host, s)
			}
		}
		if n := hitsOn(t, env, "/first/wiki"); n != 4 {
			t.Fatalf("%d hits of the first organization stored, want 4", n)
		}
		// The later one routes nothing until its host is verified: it cannot take the visitors.
		if s := visitTrap(t, env, "/later/docs", ""); s != http.StatusNotFound {
			t.Fatalf("the later site's trap on the default host: %d", s)
		}
		if n, err := env.DB.Trap.Hit.Query().Where(hit.OrgID(later.Org.ID)).Count(ft.System()); err != nil || n != 0 {
			t.Fatalf("%d hits recorded for the later organization (%v)", n, err)
		}
	})
}

// The rate limit is taken before the credential is looked up: while a key's bucket is
// empty its requests are refused (429) without a database read. Shown by revoking the key
// underneath (raw SQL, so no hook or cache of ours learns it): the empty bucket still
// answers 429, and only once a token is back does the lookup run and answer 401.
func TestRateLimitBeforeTheKeyLookup(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, func(c *server.Config) { c.RateLimit, c.RateBurst = 2, 2 })
		a := env.Tenant("a")
		get := func() int {
			res, _ := env.Get(a.ReadOnly, "/dashboard/api/traps")
			return res.StatusCode
		}
		for i := range 2 {
			if s := get(); s != http.StatusOK {
				t.Fatalf("request %d within the burst: %d", i, s)
			}
		}
		q := "UPDATE api_keys SET revoked_at = ? WHERE org_id = ?"
		if b.Name == "postgres" {
			q = "UPDATE api_keys SET revoked_at = $1 WHERE org_id = $2"
		}
		if _, err := env.DB.SQL.ExecContext(context.Background(), q, time.Now().UTC(), a.Org.ID); err != nil {
			t.Fatal(err)
		}
		if s := get(); s != http.StatusTooManyRequests {
			t.Fatalf("a request on an empty bucket: %d, want 429 before any lookup", s)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			s := get()
			if s == http.StatusUnauthorized {
				return
			}
			if s != http.StatusTooManyRequests || time.Now().After(deadline) {
				t.Fatalf("once a token is back: %d, want the lookup's 401", s)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}
