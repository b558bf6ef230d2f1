package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flytrap/flytrap/apikey"
	"github.com/flytrap/flytrap/ent/privacy"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/server"
	"github.com/flytrap/flytrap/store"
)

// syncBuffer is an io.Writer that a command writes to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// fakeEnv is an environment holding only the given KEY, value pairs.
func fakeEnv(kv ...string) server.Env {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

var noEnv = fakeEnv()

type result struct {
	stdout, stderr string
	err            error
}

// The tests run one at a time (only TestBinary, another process, is parallel): every command
// opens the database with store.Open, whose schema migration is not safe to run concurrently
// within one process.

// cli runs one command to completion, in-process.
func cli(t *testing.T, env server.Env, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var stdout, stderr syncBuffer
	err := run(ctx, args, &stdout, &stderr, env)
	return result{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// mustCLI runs a command that must succeed and returns its stdout.
func mustCLI(t *testing.T, env server.Env, args ...string) string {
	t.Helper()
	r := cli(t, env, args...)
	if r.err != nil {
		t.Fatalf("flytrap %s: %v\nstderr: %s", strings.Join(args, " "), r.err, r.stderr)
	}
	return r.stdout
}

// failCLI runs a command that must fail, print nothing on stdout, and returns its error.
func failCLI(t *testing.T, env server.Env, args ...string) error {
	t.Helper()
	r := cli(t, env, args...)
	if r.err == nil {
		t.Fatalf("flytrap %s: succeeded, want an error\nstdout: %s", strings.Join(args, " "), r.stdout)
	}
	if r.stdout != "" {
		t.Errorf("flytrap %s: failed but printed on stdout: %q", strings.Join(args, " "), r.stdout)
	}
	return r.err
}

var (
	orgLine = regexp.MustCompile(`^org_[0-9a-z]{26}\n$`)
	keyLine = regexp.MustCompile(`^ftk_[0-9A-Za-z]{36}\n$`)
)

func createOrgCLI(t *testing.T, dsn, name string) string {
	t.Helper()
	out := mustCLI(t, noEnv, "orgs", "create", "--db", dsn, "--name", name)
	if !orgLine.MatchString(out) {
		t.Fatalf("orgs create printed %q, want an organization id alone", out)
	}
	id := strings.TrimSpace(out)
	if ids.Prefix(id) != ids.Org {
		t.Fatalf("orgs create printed %q, not a valid org id", id)
	}
	return id
}

func createKeyCLI(t *testing.T, dsn, org, name, scope string) string {
	t.Helper()
	out := mustCLI(t, noEnv, "keys", "create", "--db", dsn, "--org", org, "--name", name, "--scope", scope)
	if !keyLine.MatchString(out) {
		t.Fatalf("keys create printed %q, want the key alone", out)
	}
	key := strings.TrimSpace(out)
	if !apikey.WellFormed(key) {
		t.Fatalf("keys create printed %q, which is not a well-formed key", key)
	}
	return key
}

// api is a Flytrap API served over a database the commands also use.
type api struct {
	url    string
	client *http.Client
}

// startAPI serves the real router over dsn, as a running instance would.
func startAPI(t *testing.T, dsn string) api {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("open %s: %v", server.RedactDSN(dsn), err)
	}
	t.Cleanup(func() { db.Close() })
	cfg := server.DefaultConfig()
	cfg.APIAddr = "127.0.0.1:0"
	cfg.DB = dsn
	srv, err := server.New(ctx, cfg, db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return api{url: hs.URL, client: hs.Client()}
}

type gqlResponse struct {
	status int
	Data   map[string]any `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
	raw string
}

func (r gqlResponse) code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

// graphql posts query to base/graphql as the holder of key.
func graphql(t *testing.T, client *http.Client, base, key, query string) gqlResponse {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/graphql", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s/graphql: %v", base, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := gqlResponse{status: res.StatusCode, raw: string(raw)}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("decode GraphQL response (%d): %v: %s", res.StatusCode, err, raw)
	}
	return out
}

func (a api) graphql(t *testing.T, key, query string) gqlResponse {
	t.Helper()
	return graphql(t, a.client, a.url, key, query)
}

// orgOf returns the organization key belongs to, failing unless the request succeeds.
func (a api) orgOf(t *testing.T, key string) string {
	t.Helper()
	r := a.graphql(t, key, `{ organization { id } }`)
	if r.status != http.StatusOK || len(r.Errors) > 0 {
		t.Fatalf("{ organization } with the key: %d %s", r.status, r.raw)
	}
	return ft.Dig(r.Data, "organization", "id").(string)
}

func TestOrgsCreate(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		first := createOrgCLI(t, dsn, "Acme")
		second := createOrgCLI(t, dsn, "  Umbrella  ")
		if first == second {
			t.Fatalf("two organizations got the same id %s", first)
		}
		// Each organization gets its default site, which a key of that organization sees.
		key := createKeyCLI(t, dsn, second, "check", "read-only")
		a := startAPI(t, dsn)
		r := a.graphql(t, key, `{ organization { id name } sites { totalCount } }`)
		if len(r.Errors) > 0 {
			t.Fatalf("query: %s", r.raw)
		}
		if got := ft.Dig(r.Data, "organization", "name"); got != "Umbrella" {
			t.Errorf("name = %v, want the trimmed %q", got, "Umbrella")
		}
		if got := ft.Dig(r.Data, "sites", "totalCount"); got != float64(1) {
			t.Errorf("sites of a new organization = %v, want 1 (the default site)", got)
		}

		for name, args := range map[string][]string{
			"empty name":   {"--name", ""},
			"blank name":   {"--name", "   "},
			"missing name": {},
		} {
			err := failCLI(t, noEnv, append([]string{"orgs", "create", "--db", dsn}, args...)...)
			if !strings.Contains(err.Error(), "--name") {
				t.Errorf("%s: error %q does not name --name", name, err)
			}
		}
		failCLI(t, noEnv, "orgs", "--db", dsn, "--name", "x")           // no subcommand
		failCLI(t, noEnv, "orgs", "delete", "--db", dsn, "--name", "x") // unknown subcommand
		failCLI(t, noEnv, "orgs", "create", "--db", dsn, "--bogus")     // unknown flag
	})
}

func TestKeysCreate(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		org := createOrgCLI(t, dsn, "Acme")
		keys := map[string]string{}
		for _, scope := range []string{"read-only", "read-write", "admin"} {
			keys[scope] = createKeyCLI(t, dsn, org, scope+" key", scope)
		}
		// The GraphQL spelling is accepted too.
		keys["READ_WRITE"] = createKeyCLI(t, dsn, org, "upper-case", "READ_WRITE")

		a := startAPI(t, dsn)
		for scope, key := range keys {
			if got := a.orgOf(t, key); got != org {
				t.Errorf("%s key authenticates for %s, want %s", scope, got, org)
			}
		}
		// Each key carries the scope it was created with.
		const adminOnly = `{ apiKeys { totalCount } }`
		const writeOnly = `mutation { createTrap(input: {name: "Docs", type: page}) { id } }`
		for _, c := range []struct {
			scope, query string
			allowed      bool
		}{
			{"read-only", writeOnly, false},
			{"read-write", writeOnly, true},
			{"READ_WRITE", adminOnly, false},
			{"read-write", adminOnly, false},
			{"admin", adminOnly, true},
		} {
			r := a.graphql(t, keys[c.scope], c.query)
			if c.allowed && len(r.Errors) > 0 {
				t.Errorf("%s key: %s refused: %s", c.scope, c.query, r.raw)
			}
			if !c.allowed && r.code() != server.CodeForbidden {
				t.Errorf("%s key: %s: code %q, want %s: %s", c.scope, c.query, r.code(), server.CodeForbidden, r.raw)
			}
		}

		other := createOrgCLI(t, dsn, "Other")
		unknownOrg := ids.New(ids.Org)
		for _, c := range []struct {
			name string
			args []string
			want string
		}{
			{"bad scope", []string{"--org", org, "--name", "x", "--scope", "superuser"}, "--scope"},
			{"no scope", []string{"--org", org, "--name", "x"}, "--scope"},
			{"unknown org", []string{"--org", unknownOrg, "--name", "x", "--scope", "admin"}, "not found"},
			{"malformed org", []string{"--org", "acme", "--name", "x", "--scope", "admin"}, "not an organization id"},
			{"missing org", []string{"--name", "x", "--scope", "admin"}, "--org"},
			{"missing name", []string{"--org", org, "--scope", "admin"}, "--name"},
		} {
			err := failCLI(t, noEnv, append([]string{"keys", "create", "--db", dsn}, c.args...)...)
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: error %q does not mention %q", c.name, err, c.want)
			}
		}
		failCLI(t, noEnv, "keys", "--db", dsn)
		failCLI(t, noEnv, "keys", "rotate", "--db", dsn)

		// No failed attempt created a key: the other organization has none, ours has the four above.
		if out := mustCLI(t, noEnv, "keys", "list", "--db", dsn, "--org", other); strings.Count(out, "key_") != 0 {
			t.Errorf("the other organization has keys:\n%s", out)
		}
		if out := mustCLI(t, noEnv, "keys", "list", "--db", dsn, "--org", org); strings.Count(out, "key_") != 4 {
			t.Errorf("want 4 keys:\n%s", out)
		}
	})
}

func TestKeysListAndRevoke(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		org := createOrgCLI(t, dsn, "Acme")
		ro := createKeyCLI(t, dsn, org, "dashboard", "read-only")
		adm := createKeyCLI(t, dsn, org, "ops admin", "admin")

		list := mustCLI(t, noEnv, "keys", "list", "--db", dsn, "--org", org)
		lines := strings.Split(strings.TrimRight(list, "\n"), "\n")
		if len(lines) != 3 {
			t.Fatalf("keys list: want a header and 2 rows:\n%s", list)
		}
		for _, h := range []string{"ID", "NAME", "SCOPE", "PREFIX"} {
			if !strings.Contains(lines[0], h) {
				t.Errorf("header %q lacks %s", lines[0], h)
			}
		}
		rows := map[string][]string{} // key name → fields of its row
		for _, l := range lines[1:] {
			f := strings.Fields(l)
			if len(f) < 4 || ids.Prefix(f[0]) != ids.APIKey {
				t.Fatalf("row %q does not start with a key id", l)
			}
			rows[f[1]] = f
		}
		for key, want := range map[string]struct{ name, scope string }{
			ro:  {"dashboard", "read-only"},
			adm: {"ops", "admin"}, // "ops admin" spans two fields
		} {
			f, ok := rows[want.name]
			if !ok {
				t.Fatalf("no row for %q:\n%s", want.name, list)
			}
			if !strings.Contains(strings.Join(f, " "), " "+want.scope+" "+key[:10]+"…") {
				t.Errorf("row %q: want scope %s and display prefix %s…", f, want.scope, key[:10])
			}
		}
		for _, key := range []string{ro, adm} {
			if strings.Contains(list, key) || strings.Contains(list, key[10:]) {
				t.Fatalf("keys list shows a secret:\n%s", list)
			}
		}
		roID := rows["dashboard"][0]

		for name, args := range map[string][]string{
			"missing org": {"keys", "list", "--db", dsn},
			"unknown org": {"keys", "list", "--db", dsn, "--org", ids.New(ids.Org)},
		} {
			if err := failCLI(t, noEnv, args...); err == nil {
				t.Errorf("%s: no error", name)
			}
		}

		a := startAPI(t, dsn)
		if got := a.orgOf(t, ro); got != org {
			t.Fatalf("key authenticates for %s, want %s", got, org)
		}
		if out := mustCLI(t, noEnv, "keys", "revoke", roID, "--db", dsn); !strings.Contains(out, roID) {
			t.Errorf("keys revoke printed %q", out)
		}
		// The very next request is refused, by the instance that was already running.
		r := a.graphql(t, ro, `{ organization { id } }`)
		if r.status != http.StatusUnauthorized || r.code() != server.CodeUnauthenticated {
			t.Fatalf("revoked key: %d %s, want 401 %s", r.status, r.raw, server.CodeUnauthenticated)
		}
		if got := a.orgOf(t, adm); got != org {
			t.Errorf("the other key stopped working: %s", got)
		}
		// Revoking again is harmless; the list shows the key as revoked.
		mustCLI(t, noEnv, "keys", "revoke", "--db", dsn, roID)
		list = mustCLI(t, noEnv, "keys", "list", "--db", dsn, "--org", org)
		for _, l := range strings.Split(list, "\n") {
			if strings.HasPrefix(l, roID) && !strings.Contains(l, "revoked") {
				t.Errorf("revoked key listed as %q", l)
			}
		}

		for name, args := range map[string][]string{
			"unknown id":   {"keys", "revoke", "--db", dsn, ids.New(ids.APIKey)},
			"not a key id": {"keys", "revoke", "--db", dsn, org},
			"garbage":      {"keys", "revoke", "--db", dsn, "nope"},
			"no id":        {"keys", "revoke", "--db", dsn},
		} {
			if err := failCLI(t, noEnv, args...); err == nil {
				t.Errorf("%s: no error", name)
			}
		}
		if got := a.orgOf(t, adm); got != org {
			t.Errorf("a failed revoke touched another key: %s", got)
		}
	})
}

// TestDatabaseSelection checks that --db and FLYTRAP_DB both select the database, the flag winning.
func TestDatabaseSelection(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		flagDB, envDB := b.DSN(t), b.DSN(t)
		env := fakeEnv("FLYTRAP_DB", envDB)

		out := mustCLI(t, env, "orgs", "create", "--name", "from env")
		inEnv := strings.TrimSpace(out)
		out = mustCLI(t, env, "orgs", "create", "--db", flagDB, "--name", "from flag")
		inFlag := strings.TrimSpace(out)

		mustCLI(t, env, "keys", "list", "--org", inEnv)
		failCLI(t, env, "keys", "list", "--org", inFlag)
		mustCLI(t, env, "keys", "list", "--db", flagDB, "--org", inFlag)
		failCLI(t, env, "keys", "list", "--db", flagDB, "--org", inEnv)

		// keys create and revoke follow the same rule.
		key := strings.TrimSpace(mustCLI(t, env, "keys", "create", "--db", flagDB, "--org", inFlag, "--name", "k", "--scope", "admin"))
		if got := startAPI(t, flagDB).orgOf(t, key); got != inFlag {
			t.Errorf("key made with --db authenticates for %s, want %s", got, inFlag)
		}
		list := mustCLI(t, fakeEnv("FLYTRAP_DB", flagDB), "keys", "list", "--org", inFlag)
		keyID := strings.Fields(strings.Split(list, "\n")[1])[0]
		failCLI(t, env, "keys", "revoke", keyID)
		mustCLI(t, env, "keys", "revoke", "--db", flagDB, keyID)
	})
}

func TestDefaultDatabaseFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	org := strings.TrimSpace(mustCLI(t, noEnv, "orgs", "create", "--name", "Acme"))
	if _, err := os.Stat(filepath.Join(dir, "flytrap.db")); err != nil {
		t.Fatalf("no flytrap.db in the working directory: %v", err)
	}
	mustCLI(t, noEnv, "keys", "list", "--org", org, "--db", "sqlite:flytrap.db")
}

// serving is `flytrap serve` running in-process.
type serving struct {
	stdout, stderr *syncBuffer
	addr           string
	cancel         context.CancelFunc
	done           chan error
}

var listening = regexp.MustCompile(`"msg":"listening","api":"([^"]+)"`)

// startServe starts `flytrap serve` with args; wait blocks until its API listens.
func startServe(t *testing.T, env server.Env, args ...string) *serving {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &serving{stdout: &syncBuffer{}, stderr: &syncBuffer{}, cancel: cancel, done: make(chan error, 1)}
	args = append([]string{"serve", "--log-format", "json"}, args...)
	go func() { s.done <- run(ctx, args, s.stdout, s.stderr, env) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-s.done:
			s.done <- err
		case <-time.After(20 * time.Second):
			t.Errorf("flytrap serve still running 20s after cancel")
		}
	})
	return s
}

// serveReady starts `flytrap serve` with args and waits until its API listens.
func serveReady(t *testing.T, env server.Env, args ...string) *serving {
	args = append(args, "--trap-addr", "127.0.0.1:0")
	t.Helper()
	s := startServe(t, env, args...)
	s.wait(t)
	return s
}

// wait polls the logs until the API listens; it fails if the command ends first.
func (s *serving) wait(t *testing.T) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if m := listening.FindStringSubmatch(s.stderr.String()); m != nil {
			s.addr = m[1]
			return
		}
		select {
		case err := <-s.done:
			s.done <- err // for stop and the cleanup
			t.Fatalf("flytrap serve ended before listening: %v\nstderr: %s", err, s.stderr)
		case <-deadline:
			t.Fatalf("flytrap serve not listening after 60s\nstderr: %s", s.stderr)
		case <-tick.C:
		}
	}
}

// stop cancels the command, as SIGINT/SIGTERM do, and expects a clean return.
func (s *serving) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	select {
	case err := <-s.done:
		s.done <- err
		if err != nil {
			t.Fatalf("flytrap serve returned %v after cancel, want nil\nstderr: %s", err, s.stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("flytrap serve did not stop within 20s of cancel")
	}
}

var bannerKey = regexp.MustCompile(`(?m)^\s+(ftk_[0-9A-Za-z]+)\s*$`)

func TestServeBootstrap(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		// The database comes from FLYTRAP_DB and the address from FLYTRAP_API_ADDR here, from flags below.
		first := serveReady(t, fakeEnv("FLYTRAP_DB", dsn, "FLYTRAP_API_ADDR", "127.0.0.1:0"))
		out := first.stdout.String()
		m := bannerKey.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("first start printed no admin key:\n%s", out)
		}
		key := m[1]
		if !apikey.WellFormed(key) {
			t.Fatalf("printed key %q is not well formed", key)
		}
		for _, marker := range []string{"=====", "admin API key", "shown this once"} {
			if !strings.Contains(out, marker) {
				t.Errorf("banner lacks %q:\n%s", marker, out)
			}
		}
		if strings.Contains(first.stderr.String(), key) || strings.Contains(first.stderr.String(), key[10:]) {
			t.Errorf("the admin key appears in the logs:\n%s", first.stderr)
		}

		base := "http://" + first.addr
		r := graphql(t, http.DefaultClient, base, key, `{ organization { id } apiKeys { edges { node { scope } } } sites { totalCount } }`)
		if r.status != http.StatusOK || len(r.Errors) > 0 {
			t.Fatalf("query with the printed key: %d %s", r.status, r.raw)
		}
		org, _ := ft.Dig(r.Data, "organization", "id").(string)
		if !strings.Contains(out, org) {
			t.Errorf("banner does not name organization %s:\n%s", org, out)
		}
		if got := ft.Dig(r.Data, "apiKeys", "edges", 0, "node", "scope"); got != "ADMIN" {
			t.Errorf("printed key has scope %v, want ADMIN", got)
		}
		if got := ft.Dig(r.Data, "sites", "totalCount"); got != float64(1) {
			t.Errorf("bootstrap made %v sites, want 1", got)
		}
		res, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("/readyz = %d", res.StatusCode)
		}
		first.stop(t)

		// A second start on the same database prints nothing and creates nothing; the key still works.
		second := serveReady(t, noEnv, "--db", dsn, "--api-addr", "127.0.0.1:0")
		if out := second.stdout.String(); out != "" {
			t.Errorf("second start printed on stdout:\n%s", out)
		}
		r = graphql(t, http.DefaultClient, "http://"+second.addr, key, `{ organization { id } apiKeys { totalCount } }`)
		if got := ft.Dig(r.Data, "organization", "id"); got != org {
			t.Errorf("after restart the key is for %v (%s), want %s", got, r.raw, org)
		}
		if got := ft.Dig(r.Data, "apiKeys", "totalCount"); got != float64(1) {
			t.Errorf("after restart: %v keys, want 1", got)
		}
		second.stop(t)
		if n := countOrgs(t, dsn); n != 1 {
			t.Errorf("%d organizations after two starts, want 1", n)
		}
	})
}

// TestServeAfterOrgsCreate: a database that already has an organization is not empty, so serve makes no admin key.
func TestServeAfterOrgsCreate(t *testing.T) {
	dsn := ft.SQLiteDSN(t)
	createOrgCLI(t, dsn, "Acme")
	s := serveReady(t, noEnv, "--db", dsn, "--api-addr", "127.0.0.1:0")
	if out := s.stdout.String(); out != "" {
		t.Errorf("serve on a non-empty database printed:\n%s", out)
	}
	s.stop(t)
}

func countOrgs(t *testing.T, dsn string) int {
	t.Helper()
	db, err := store.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n, err := db.Client.Organization.Query().Count(privacy.DecisionContext(t.Context(), privacy.Allow))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestConcurrentBootstrap runs the first-start bootstrap of several instances (each with
// its own connection pool) on one empty database at once: exactly one creates the organization.
func TestConcurrentBootstrap(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		const instances = 4
		// Opened one after another: store.Open migrates, and what this test races is the bootstrap.
		dbs := make([]*store.DB, instances)
		for i := range dbs {
			db, err := store.Open(t.Context(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			dbs[i] = db
		}
		results := make([]*bootstrapped, instances)
		errs := make([]error, instances)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, db := range dbs {
			wg.Go(func() {
				<-start
				results[i], errs[i] = bootstrap(t.Context(), db.Client)
			})
		}
		close(start)
		wg.Wait()
		made := 0
		for i, r := range results {
			if errs[i] != nil {
				t.Errorf("instance %d: %v", i, errs[i])
			}
			if r != nil {
				made++
			}
		}
		if made != 1 {
			t.Errorf("%d instances bootstrapped, want exactly 1", made)
		}
		if n := countOrgs(t, dsn); n != 1 {
			t.Errorf("%d organizations, want exactly 1", n)
		}
	})
}

func TestUnknownCommand(t *testing.T) {
	r := cli(t, noEnv, "frobnicate")
	if r.err == nil || !strings.Contains(r.err.Error(), "frobnicate") {
		t.Fatalf("unknown command: err = %v, want one naming it", r.err)
	}
	if !strings.Contains(r.stderr, "Usage:") || !strings.Contains(r.stderr, "flytrap keys create") {
		t.Errorf("unknown command: no usage on stderr:\n%s", r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("unknown command printed on stdout: %q", r.stdout)
	}

	r = cli(t, noEnv, "help")
	if r.err != nil || !strings.Contains(r.stdout, "Usage:") {
		t.Errorf("help: err %v, stdout %q", r.err, r.stdout)
	}
}

func TestInvalidConfig(t *testing.T) {
	dir := t.TempDir()
	dsn := filepath.Join(dir, "never.db")
	for _, c := range []struct {
		name string
		env  server.Env
		args []string
		want string
	}{
		{"log format flag", noEnv, []string{"--log-format", "xml"}, "log-format"},
		{"log format env", fakeEnv("FLYTRAP_LOG_FORMAT", "xml"), nil, "log-format"},
		{"tiny body limit", noEnv, []string{"--max-body-bytes", "10"}, "max-body-bytes"},
		{"zero depth limit", noEnv, []string{"--depth-limit", "0"}, "depth-limit"},
		{"last-used interval", noEnv, []string{"--last-used-interval", "1ms"}, "last-used-interval"},
		{"jwks without issuer", noEnv, []string{"--jwks-url", "https://idp.example/jwks", "--jwt-audience", "flytrap"}, "issuer"},
		{"empty api addr", noEnv, []string{"--api-addr", ""}, "api-addr"},
		{"not a number", noEnv, []string{"--complexity-limit", "lots"}, "complexity-limit"},
		{"unknown flag", noEnv, []string{"--trap-door"}, "trap-door"},
		{"stray argument", noEnv, []string{"now"}, "no arguments"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"serve", "--db", dsn, "--api-addr", "127.0.0.1:0"}, c.args...)
			r := cli(t, c.env, args...)
			if r.err == nil {
				t.Fatalf("no error; stdout %q", r.stdout)
			}
			if !strings.Contains(r.err.Error(), c.want) && !strings.Contains(r.stderr, c.want) {
				t.Errorf("error %q (stderr %q) does not mention %q", r.err, r.stderr, c.want)
			}
			if r.stdout != "" {
				t.Errorf("printed on stdout: %q", r.stdout)
			}
		})
	}
	// Configuration is checked before the database is touched.
	if _, err := os.Stat(dsn); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an invalid configuration created the database file: %v", err)
	}
}

// TestBinary builds the real binary, runs it, queries it, and stops it with SIGTERM.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the build-and-run test of the flytrap binary")
	}
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the binary with: %v", err)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "flytrap")
	build := exec.CommandContext(t.Context(), goTool, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	addr := freeAddr(t)
	cmd := exec.Command(bin, "--db", filepath.Join(tmp, "x.db"), "--api-addr", addr, "--trap-addr", freeAddr(t))
	cmd.Dir = tmp
	cmd.Env = withoutFlytrapVars(os.Environ())
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	base := "http://" + addr
	var key string
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := bannerKey.FindStringSubmatch(stdout.String()); m != nil && key == "" {
			key = m[1]
		}
		if key != "" && healthy(base) {
			break
		}
		select {
		case <-exited:
			t.Fatalf("flytrap exited early: %v\nstdout: %s\nstderr: %s", waitErr, &stdout, &stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("flytrap not ready after 30s\nstdout: %s\nstderr: %s", &stdout, &stderr)
		}
	}
	if !apikey.WellFormed(key) {
		t.Fatalf("printed key %q is not well formed", key)
	}

	r := graphql(t, http.DefaultClient, base, key, `{ organization { id } }`)
	if r.status != http.StatusOK || len(r.Errors) > 0 {
		t.Fatalf("GraphQL: %d %s", r.status, r.raw)
	}
	if id, _ := ft.Dig(r.Data, "organization", "id").(string); ids.Prefix(id) != ids.Org {
		t.Fatalf("organization id %q", id)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("after SIGTERM: %v (want exit code 0)\nstderr: %s", waitErr, &stderr)
		}
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("exit code %d after SIGTERM, want 0", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("flytrap still running 15s after SIGTERM\nstderr: %s", &stderr)
	}
	if !strings.Contains(stderr.String(), "shutting down") {
		t.Errorf("no shutdown in the logs:\n%s", &stderr)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		// The kernel may hand a port it just freed out again: a test asking for an API and a trap
		// address got the same one twice (CI: "trap-addr: must be set and differ from api-addr").
		if _, taken := handedOut.LoadOrStore(addr, true); !taken {
			return addr
		}
	}
}

// handedOut is every address freeAddr returned in this test binary.
var handedOut sync.Map

func healthy(base string) bool {
	res, err := http.Get(base + "/healthz")
	if err != nil {
		return false
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode == http.StatusOK
}

func withoutFlytrapVars(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "FLYTRAP_") {
			out = append(out, kv)
		}
	}
	return out
}

// TestBadArgumentsLeaveNoDatabase checks flags before opening the database, and
// refuses words left over from an unquoted name.
func TestBadArgumentsLeaveNoDatabase(t *testing.T) {
	dir := t.TempDir()
	dsn := dir + "/never.db"
	for _, args := range [][]string{
		{"keys", "create", "--db", dsn, "--org", "org_x", "--name", "n", "--scope", "bogus"},
		{"keys", "create", "--db", dsn, "--org", "acme", "--name", "n", "--scope", "admin"},
		{"keys", "list", "--db", dsn, "--org", "acme"},
		{"keys", "revoke", "--db", dsn, "nope"},
		{"orgs", "create", "--db", dsn, "--name", "Big", "Corp"},
		{"orgs", "create", "--db", dsn},
	} {
		if err := run(t.Context(), args, io.Discard, io.Discard, noEnv); err == nil {
			t.Errorf("%q succeeded", args)
		}
	}
	if _, err := os.Stat(dsn); !os.IsNotExist(err) {
		t.Fatalf("a rejected command created %s", dsn)
	}
}

func TestEnvironmentThatDoesNotParseIsAnError(t *testing.T) {
	env := func(k string) string {
		if k == "FLYTRAP_INTROSPECTION" {
			return "flase"
		}
		return ""
	}
	err := run(t.Context(), []string{"serve", "--db", t.TempDir() + "/x.db"}, io.Discard, io.Discard, env)
	if err == nil || !strings.Contains(err.Error(), "FLYTRAP_INTROSPECTION") {
		t.Fatalf("got %v, want an error naming FLYTRAP_INTROSPECTION", err)
	}
}

func TestHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help", "help"} {
		var out strings.Builder
		if err := run(t.Context(), []string{arg}, &out, io.Discard, noEnv); err != nil || !strings.Contains(out.String(), "flytrap keys create") {
			t.Errorf("%s: %v, output %q", arg, err, out.String())
		}
	}
}

// gcPercent is the GC percentage in effect in this process.
func gcPercent() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestServeSetsTheGCHeapFloor: serve raises GOGC while the live heap is under the floor
// (--gc-heap-floor-bytes) and puts it back when it stops; with GOGC in the environment
// it leaves the collector alone and says why.
func TestServeSetsTheGCHeapFloor(t *testing.T) {
	t.Setenv("GOGC", "")
	before := gcPercent()
	s := serveReady(t, noEnv, "--db", filepath.Join(t.TempDir(), "f.db"), "--api-addr", "127.0.0.1:0", "--gc-heap-floor-bytes", "1099511627776")
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() <= 100 {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC stayed at %d under a 1 TiB heap floor", gcPercent())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	s.stop(t)
	if got := gcPercent(); got != before {
		t.Fatalf("GOGC after serve stopped: %d, want the %d it was", got, before)
	}

	t.Setenv("GOGC", "150") // read by the runtime at start only: here it stands for an operator's setting
	s = serveReady(t, noEnv, "--db", filepath.Join(t.TempDir(), "f.db"), "--api-addr", "127.0.0.1:0", "--gc-heap-floor-bytes", "1099511627776")
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
	if got := gcPercent(); got != before {
		t.Errorf("serve changed GOGC to %d although GOGC was set", got)
	}
	s.stop(t)
	if !strings.Contains(s.stderr.String(), "GOGC is set") {
		t.Errorf("serve did not say it leaves GOGC alone:\n%s", s.stderr)
	}
}
