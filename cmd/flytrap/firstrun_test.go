package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flytrap/flytrap/apikey"
	ft "github.com/flytrap/flytrap/flytraptest"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	buildDir  string
)

// flytrapBinary builds ./cmd/flytrap once per test binary and returns its path.
func flytrapBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping a test of the built flytrap binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the binary with: %v", err)
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "flytrap-bin-")
		if buildErr != nil {
			return
		}
		builtBin = filepath.Join(buildDir, "flytrap")
		out, err := exec.Command(goTool, "build", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			buildErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// TestMain removes the built binary, and says which tests were skipped or ran on
// SQLite only, and how to enable them.
func TestMain(m *testing.M) {
	code := ft.Run(m)
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// takenAddr holds a port for the test's duration, as another program would.
func takenAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// runToEnd runs the binary in dir and returns its output once it exits.
func runToEnd(t *testing.T, bin, dir string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = withoutFlytrapVars(os.Environ())
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

var bannerDashboard = regexp.MustCompile(`Dashboard:\s+(http://\S+/)\s`)

// TestFirstStartWithPortTaken is a fresh clone's first start with a port taken:
// it fails without writing the database, and the next start prints the admin key
// and the dashboard's URL. Then it follows the documented recovery path for a lost key.
func TestFirstStartWithPortTaken(t *testing.T) {
	bin := flytrapBinary(t)
	t.Parallel()
	dir := t.TempDir() // the working directory: flytrap.db is the default database
	dbFile := filepath.Join(dir, "flytrap.db")

	for _, c := range []struct{ name, api, trap, flag string }{
		{"api port taken", takenAddr(t), freeAddr(t), "--api-addr"},
		{"trap port taken", freeAddr(t), takenAddr(t), "--trap-addr"},
	} {
		stdout, stderr, err := runToEnd(t, bin, dir, "--api-addr", c.api, "--trap-addr", c.trap)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() == 0 {
			t.Fatalf("%s: err %v, want a non-zero exit\nstderr: %s", c.name, err, stderr)
		}
		if !strings.Contains(stderr, "address already in use") || !strings.Contains(stderr, c.flag) {
			t.Errorf("%s: stderr does not say which address is in use (%s):\n%s", c.name, c.flag, stderr)
		}
		if stdout != "" {
			t.Errorf("%s: printed on stdout:\n%s", c.name, stdout)
		}
		if _, err := os.Stat(dbFile); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: a start that could not listen left %s behind (%v): the next start would print no key", c.name, dbFile, err)
		}
	}

	// The port is free now: this start makes the organization and shows its key and the dashboard.
	addr := freeAddr(t)
	base, key, stop := startBinary(t, bin, dir, "--api-addr", addr, "--trap-addr", freeAddr(t))
	if !apikey.WellFormed(key) {
		t.Fatalf("the start after the failed ones printed no admin key (%q)", key)
	}
	if r := graphql(t, http.DefaultClient, base, key, `{ organization { id } }`); r.status != http.StatusOK || len(r.Errors) > 0 {
		t.Fatalf("the printed key: %d %s", r.status, r.raw)
	}
	out := stop()
	m := bannerDashboard.FindStringSubmatch(out)
	if m == nil || m[1] != "http://"+addr+"/" {
		t.Errorf("banner names dashboard %q, want http://%s/:\n%s", m, addr, out)
	}

	// Lost the key: the documented recovery makes a new admin key on the same database.
	orgs, stderr, err := runToEnd(t, bin, dir, "admin", "orgs", "list")
	if err != nil {
		t.Fatalf("orgs list: %v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSpace(orgs), "\n")
	if len(lines) != 2 {
		t.Fatalf("orgs list after the first start: want one organization:\n%s", orgs)
	}
	org := strings.Fields(lines[1])[0]
	newKey, stderr, err := runToEnd(t, bin, dir, "admin", "keys", "create", "--org", org, "--name", "recovered", "--scope", "admin")
	if err != nil {
		t.Fatalf("keys create: %v\n%s", err, stderr)
	}
	newKey = strings.TrimSpace(newKey)
	if newKey == key || !apikey.WellFormed(newKey) {
		t.Fatalf("keys create printed %q", newKey)
	}
	base, _, stop = startBinary(t, bin, dir, "--api-addr", freeAddr(t), "--trap-addr", freeAddr(t))
	r := graphql(t, http.DefaultClient, base, newKey, `{ viewer { orgID scope } }`)
	if len(r.Errors) > 0 || r.status != http.StatusOK {
		t.Fatalf("the recovered key: %d %s", r.status, r.raw)
	}
	if got := r.Data["viewer"].(map[string]any); got["orgID"] != org || got["scope"] != "ADMIN" {
		t.Errorf("the recovered key is %v, want ADMIN of %s", got, org)
	}
	if out := stop(); out != "" {
		t.Errorf("a later start printed on stdout:\n%s", out)
	}
}

// startBinary runs the binary in dir until it answers /healthz. It returns the API's
// base URL, the admin key if it printed one, and a function that stops it (SIGTERM)
// and returns everything it printed on stdout.
func startBinary(t *testing.T, bin, dir string, args ...string) (base, key string, stop func() string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = withoutFlytrapVars(os.Environ())
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var addr string
	for i, a := range args {
		if a == "--api-addr" && i+1 < len(args) {
			addr = args[i+1]
		}
	}
	base = "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	// Ready when this process says it listens on addr and the address answers: another
	// test's server may hold a port freeAddr handed out, and would answer /healthz too.
	listening := func() bool {
		log := stderr.String()
		return (strings.Contains(log, `"msg":"listening"`) || strings.Contains(log, "msg=listening")) && strings.Contains(log, addr)
	}
	for !listening() || !healthy(base) {
		select {
		case err := <-exited:
			t.Fatalf("flytrap exited early: %v\nstdout: %s\nstderr: %s", err, &stdout, &stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("flytrap not healthy after 60s\nstderr: %s", &stderr)
		}
	}
	// A first start logs "created the first organization" after printing the banner, but
	// stdout and stderr reach us through two copying goroutines: wait for the banner too.
	for strings.Contains(stderr.String(), "created the first organization") &&
		bannerKey.FindStringSubmatch(stdout.String()) == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if m := bannerKey.FindStringSubmatch(stdout.String()); m != nil {
		key = m[1]
	}
	return base, key, func() string {
		t.Helper()
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("flytrap stopped with %v\nstderr: %s", err, &stderr)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("flytrap still running 30s after SIGINT")
		}
		return stdout.String()
	}
}

// TestBannerNamesDashboard: the first start's banner names the dashboard beside the
// key, and the URL serves it.
func TestBannerNamesDashboard(t *testing.T) {
	s := serveReady(t, noEnv, "--db", t.TempDir()+"/x.db", "--api-addr", "127.0.0.1:0")
	out := s.stdout.String()
	m := bannerDashboard.FindStringSubmatch(out)
	if m == nil || m[1] != "http://"+s.addr+"/" {
		t.Fatalf("banner names dashboard %v, want http://%s/:\n%s", m, s.addr, out)
	}
	if !strings.Contains(out, "flytrap admin keys create --org ORG_ID") || !strings.Contains(out, "flytrap admin orgs list") {
		t.Errorf("banner does not say how to recover a lost key:\n%s", out)
	}
	res, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "<html") {
		t.Errorf("GET %s = %d %q, want the dashboard", m[1], res.StatusCode, body[:min(len(body), 200)])
	}
	s.stop(t)
}

func TestBrowsable(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:8080": "127.0.0.1:8080",
		"0.0.0.0:8080":   "127.0.0.1:8080",
		"[::]:8080":      "127.0.0.1:8080",
		"[::1]:9":        "[::1]:9",
		"10.0.0.5:80":    "10.0.0.5:80",
	} {
		addr, err := net.ResolveTCPAddr("tcp", in)
		if err != nil {
			t.Fatal(err)
		}
		if got := browsable(addr); got != want {
			t.Errorf("browsable(%s) = %s, want %s", in, got, want)
		}
	}
}
