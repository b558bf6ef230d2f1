// Package flytraptest runs real Flytrap servers for tests: a fresh database per
// test (a SQLite file always, PostgreSQL too when FLYTRAP_TEST_POSTGRES_URL is
// set), the real router behind httptest, and helpers to seed tenants and keys.
package flytraptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/flytrap/flytrap/apikey"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/flytraptest/testdb"
	"github.com/flytrap/flytrap/server"
	"github.com/flytrap/flytrap/store"
	"github.com/flytrap/flytrap/viewer"
)

// PostgresEnv names the variable holding an admin URL of a PostgreSQL server for tests.
const PostgresEnv = testdb.PostgresEnv

// Backend is a database a test runs on.
type Backend = testdb.Backend

// Backends lists SQLite, and PostgreSQL when FLYTRAP_TEST_POSTGRES_URL is set.
func Backends() []Backend { return testdb.Backends() }

// ForEachBackend runs f as a subtest on every backend.
func ForEachBackend(t *testing.T, f func(t *testing.T, b Backend)) {
	t.Helper()
	testdb.ForEachBackend(t, f)
}

// SQLiteDSN returns a new SQLite file in t's temporary directory.
func SQLiteDSN(t testing.TB) string { return testdb.SQLiteDSN(t) }

// PostgresDSN creates a database of its own for t on the test server and drops it afterwards.
// It skips t with a clear message when no server is configured.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	return testdb.PostgresDSN(t)
}

// Env is a running Flytrap API over a fresh database.
type Env struct {
	T      testing.TB
	DB     *store.DB
	Server *server.Server
	HTTP   *httptest.Server // the API listener
	Trap   *httptest.Server // the trap listener
	Config server.Config
}

// Option adjusts the configuration before the server starts.
type Option func(*server.Config)

// JournalAck makes the trap listener answer once a hit is journaled, as it does by default
// (the tests' instances answer once it is stored): what a test then reads may not show it yet.
func JournalAck(c *server.Config) { c.Trap.AckApplied = false }

// Start opens a fresh database on b and serves the real router on a local port.
func Start(t testing.TB, b Backend, opts ...Option) *Env {
	t.Helper()
	return StartOn(t, b.DSN(t), opts...)
}

// StartOn serves an instance on the database dsn names, which other instances may share.
func StartOn(t testing.TB, dsn string, opts ...Option) *Env {
	t.Helper()
	ctx := context.Background()
	cfg := server.DefaultConfig()
	cfg.APIAddr, cfg.TrapAddr = "127.0.0.1:0", "127.0.0.1:1"
	// Tests make requests (and fail to authenticate) faster than any person; the limits have their own tests.
	cfg.RateLimit, cfg.RateBurst = 1e6, 1e6
	cfg.AuthFailureRate, cfg.AuthFailureBurst = 1e6, 1e6
	// A journal of its own (instances on one database must not share one), and answers after
	// their hits are stored: the tests read what they just caused. JournalAck keeps the default.
	cfg.Trap.Journal, cfg.Trap.AckApplied = filepath.Join(t.TempDir(), "hits"), true
	// No lookups of visitors' addresses nor fetches of the operators' lists from tests:
	// those that test them point them at servers of their own.
	cfg.Crawler.DNS.Off, cfg.Crawler.Refresh.Interval = true, 0
	for _, o := range opts {
		o(&cfg)
	}
	db, err := store.OpenWith(ctx, dsn, cfg.StoreOptions())
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	t.Cleanup(func() { db.Close() })
	srvCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	srv, err := server.New(srvCtx, cfg, db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	wait := srv.Start(srvCtx)
	t.Cleanup(func() { cancel(); wait() })
	// The listeners as Run configures them: timeouts, connection limits, the trap's disguise.
	hs := httptest.NewUnstartedServer(nil)
	hs.Config = srv.APIServer()
	hs.Start()
	t.Cleanup(hs.Close)
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = srv.TrapServer()
	ts.Listener = srv.TrapListener(ts.Listener)
	ts.Start()
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Stop)
	return &Env{T: t, DB: db, Server: srv, HTTP: hs, Trap: ts, Config: cfg}
}

// System is a context that acts for the system, past the tenant policy.
func System() context.Context { return privacy.DecisionContext(context.Background(), privacy.Allow) }

// Tenant is a seeded organization with one key per scope.
type Tenant struct {
	Org       *ent.Organization
	Site      *ent.Site
	ReadOnly  string
	ReadWrite string
	Admin     string
}

// Key returns the tenant's key of scope s.
func (tn Tenant) Key(s viewer.Scope) string {
	switch s {
	case viewer.ReadOnly:
		return tn.ReadOnly
	case viewer.ReadWrite:
		return tn.ReadWrite
	}
	return tn.Admin
}

// Tenant creates an organization with a default site and a key of each scope.
func (e *Env) Tenant(name string) Tenant {
	e.T.Helper()
	ctx := System()
	c := e.DB.Client
	org := must(c.Organization.Create().SetName(name).Save(ctx))(e.T)
	site := must(c.Site.Create().SetOrgID(org.ID).SetName("default").Save(ctx))(e.T)
	return Tenant{
		Org: org, Site: site,
		ReadOnly:  e.Key(org.ID, viewer.ReadOnly),
		ReadWrite: e.Key(org.ID, viewer.ReadWrite),
		Admin:     e.Key(org.ID, viewer.Admin),
	}
}

// Key creates an API key of scope s for org and returns it in full.
func (e *Env) Key(org string, s viewer.Scope) string {
	e.T.Helper()
	k, err := apikey.Generate()
	if err != nil {
		e.T.Fatal(err)
	}
	must(e.DB.Client.APIKey.Create().SetOrgID(org).SetName(string(s) + " key").SetScope(s).
		SetPrefix(k.DisplayPrefix).SetHash(k.Hash).Save(System()))(e.T)
	return k.Plaintext
}

func must[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// Response is a decoded GraphQL response.
type Response struct {
	Status int
	Data   map[string]any
	Errors []struct {
		Message    string         `json:"message"`
		Path       []any          `json:"path"`
		Extensions map[string]any `json:"extensions"`
	}
	Raw []byte
}

// Code is the extensions.code of the first error, or "".
func (r Response) Code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

// GraphQL posts a query with variables as the holder of token.
func (e *Env) GraphQL(token, query string, vars map[string]any) Response {
	e.T.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, e.HTTP.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := e.HTTP.Client().Do(req)
	if err != nil {
		e.T.Fatalf("POST /graphql: %v", err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := Response{Status: res.StatusCode, Raw: raw}
	if err := json.Unmarshal(raw, &out); err != nil {
		e.T.Fatalf("decode GraphQL response (%d): %v: %s", res.StatusCode, err, raw)
	}
	return out
}

// MustGraphQL is GraphQL that fails the test on any error.
func (e *Env) MustGraphQL(token, query string, vars map[string]any) map[string]any {
	e.T.Helper()
	r := e.GraphQL(token, query, vars)
	if r.Status != http.StatusOK || len(r.Errors) > 0 {
		e.T.Fatalf("GraphQL %d: %s", r.Status, r.Raw)
	}
	return r.Data
}

// CreateTrap creates a trap of type typ named name as the holder of token, through
// GraphQL as a client would, and returns its id.
func (e *Env) CreateTrap(token, name, typ string) string {
	e.T.Helper()
	d := e.MustGraphQL(token, `mutation($n: String!, $t: TrapType!) { createTrap(input: {name: $n, type: $t}) { id } }`,
		map[string]any{"n": name, "t": typ})
	id, _ := Dig(d, "createTrap", "id").(string)
	return id
}

// Get fetches a path of the API with an optional bearer token.
func (e *Env) Get(token, path string) (*http.Response, []byte) {
	e.T.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.HTTP.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := e.HTTP.Client().Do(req)
	if err != nil {
		e.T.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// Dig walks a decoded JSON value by object keys and array indexes.
func Dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k < 0 || k >= len(a) {
				return nil
			}
			v = a[k]
		default:
			panic(fmt.Sprintf("Dig: bad path element %T", p))
		}
	}
	return v
}

// Skip skips t as one of a group of tests that need something this machine may lack;
// how says how to enable them (testdb.Skip). Main's summary names the group.
func Skip(t testing.TB, group, how, reason string) {
	t.Helper()
	testdb.Skip(t, group, how, reason)
}

// Main runs a package's tests and then prints one line per group of tests that were
// skipped or ran in part, with how to enable them. Call it from TestMain.
func Main(m *testing.M) { testdb.Main(m) }

// Run is Main without the exit, for a TestMain with more to do.
func Run(m *testing.M) int { return testdb.Run(m) }
