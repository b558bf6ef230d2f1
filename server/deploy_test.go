package server_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/decoy"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// The addresses docs/deployment.md's configurations use; the tests replace them with their own.
const (
	guideApp      = "127.0.0.1:3000"
	guideTrap     = "127.0.0.1:8081"
	guideTrapPath = "/internal/docs/deploy-runbook"
)

// guideBlock returns the body of the one fenced block of docs/deployment.md whose info string is info:
// the tests run what the guide shows, so the guide cannot drift from what works.
func guideBlock(t *testing.T, info string) string {
	t.Helper()
	doc, err := os.ReadFile("../docs/deployment.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "\n```"+info+"\n")
	if !ok {
		t.Fatalf("docs/deployment.md has no ```%s block", info)
	}
	block, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatalf("docs/deployment.md: the ```%s block is not closed", info)
	}
	for _, want := range []string{guideApp, guideTrap, guideTrapPath} {
		if !strings.Contains(block, want) {
			t.Fatalf("the guide's %s block no longer mentions %s, which this test replaces", info, want)
		}
	}
	return block + "\n"
}

// findTool returns the path of a proxy binary, or skips the test when it is not installed.
func findTool(t *testing.T, name, install string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p
		}
	}
	ft.Skip(t, "deployment guide", install, name+" is not installed")
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// freePort returns a loopback address no one listens on, for a proxy that binds it itself.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// startProxy runs cmd until the test ends and waits until addr accepts connections.
func startProxy(t *testing.T, cmd *exec.Cmd, addr string, logFile string) {
	t.Helper()
	out, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	exited := make(chan struct{}) // closed once cmd has exited; waitErr is then set
	var waitErr error
	go func() { waitErr = cmd.Wait(); out.Close(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logFile)
			t.Fatalf("%s exited before listening on %s: %v\n%s", cmd.Path, addr, waitErr, log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile)
			t.Fatalf("%s does not listen on %s: %v\n%s", cmd.Path, addr, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// besideApp is what both proxies' tests share: Flytrap trusting only the proxy's loopback
// address, one trap at the guide's path, and a stand-in application.
type besideApp struct {
	env    *ft.Env
	tenant ft.Tenant
	app    *httptest.Server
}

func startBesideApp(t *testing.T, b ft.Backend) *besideApp {
	t.Helper()
	env := ft.Start(t, b, func(c *server.Config) {
		c.Trap.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	})
	a := env.Tenant("deploy")
	env.MustGraphQL(a.ReadWrite, `mutation($p: String!) { createTrap(input: {name: "Deploy runbook", type: page, path: $p}) { id } }`,
		map[string]any{"p": guideTrapPath})
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "the application: %s", r.URL.Path)
	}))
	t.Cleanup(app.Close)
	return &besideApp{env: env, tenant: a, app: app}
}

// check sends requests through the proxy at addr from 127.0.0.2 (a visitor that is not the proxy)
// and asserts who answered each and which address the session recorded.
func (s *besideApp) check(t *testing.T, addr string) {
	t.Helper()
	visitor := &http.Client{
		Timeout: 30 * time.Second,
		// A planted URL may redirect to /login: that page is the application's, as on a real site.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{DialContext: (&net.Dialer{
			LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)},
		}).DialContext},
	}
	get := func(path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+addr+path, nil)
		req.Header.Set("User-Agent", "deploy-guide-visitor/1.0")
		req.Header.Set("X-Forwarded-For", "203.0.113.9") // spoofed: must not become the session's address
		res, err := visitor.Do(req)
		if err != nil {
			t.Fatalf("GET %s through the proxy: %v", path, err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		return res.StatusCode, string(body)
	}

	if code, body := get("/pricing"); code != 200 || body != "the application: /pricing" {
		t.Fatalf("an application path was not answered by the application: %d %q", code, body)
	}
	code, body := get(guideTrapPath)
	if code != 200 || strings.Contains(body, "the application") || !strings.Contains(body, "<html") {
		t.Fatalf("the trap path was not answered by Flytrap's decoy: %d %.200q", code, body)
	}
	// Every URL the decoy planted, in every token shape, followed: routed to Flytrap by the token rules.
	links := plantedLinks(body)
	if len(links) < 4 {
		t.Fatalf("the decoy holds %d paths carrying a token: %q", len(links), body)
	}
	for _, link := range links {
		if code, body := get(link); strings.Contains(body, "the application") {
			t.Fatalf("the decoy's planted link %s reached the application: %d %q", link, code, body)
		}
	}

	d := s.env.MustGraphQL(s.tenant.ReadOnly, `{ sessions(first: 10) { edges { node { sourceIP userAgent hitCount signalsFired } } } }`, nil)
	edges, _ := ft.Dig(d, "sessions", "edges").([]any)
	if len(edges) != 1 {
		t.Fatalf("want one session (the application's traffic is not recorded), got %v", edges)
	}
	n := ft.Dig(edges[0], "node")
	if ip := ft.Dig(n, "sourceIP"); ip != "127.0.0.2" {
		t.Errorf("the session's address is %v, want the visitor's 127.0.0.2 (not the proxy's, not the spoofed header)", ip)
	}
	if hits := ft.Dig(n, "hitCount"); hits != float64(1+len(links)) {
		t.Errorf("hitCount %v, want %d (the trap and the planted links)", hits, 1+len(links))
	}
	if sigs, _ := ft.Dig(n, "signalsFired").([]any); !containsAny(sigs, "CALLBACK_HIT") {
		t.Errorf("following the hidden link fired %v, want CALLBACK_HIT", sigs)
	}
}

// plantedLinks returns the distinct paths of body that end in a token, of any shape
// (decoy.TokenURL). Every page decoy plants several (a comment, a meta tag, hidden links).
func plantedLinks(body string) []string {
	var out []string
	for _, l := range decoy.TokenURL.FindAllString(body, -1) {
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

func containsAny(list []any, want string) bool {
	for _, v := range list {
		if v == want {
			return true
		}
	}
	return false
}

// TestNginxBesideApp runs docs/deployment.md's nginx configuration with Debian's nginx, as the
// current user, everything under a temporary prefix.
func TestNginxBesideApp(t *testing.T) {
	nginx := findTool(t, "nginx", "bash scripts/install-nginx.sh (Debian's nginx-light)")
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		s := startBesideApp(t, b)
		dir := t.TempDir()
		addr := freePort(t)
		site := strings.NewReplacer(
			guideApp, s.app.Listener.Addr().String(),
			guideTrap, s.env.Trap.Listener.Addr().String(),
			"listen 80;", "listen "+addr+";",
		).Replace(guideBlock(t, "nginx"))
		conf := fmt.Sprintf(`daemon off;
master_process off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 64; }
http {
    access_log %[1]s/access.log;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
%[2]s}
`, dir, site)
		confPath := filepath.Join(dir, "nginx.conf")
		if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(nginx, "-t", "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log")).CombinedOutput(); err != nil {
			t.Fatalf("nginx -t refuses the guide's configuration: %v\n%s", err, out)
		}
		startProxy(t, exec.Command(nginx, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log")), addr, filepath.Join(dir, "stderr.log"))
		s.check(t, addr)
	})
}

// TestCaddyBesideApp runs docs/deployment.md's Caddyfile with Debian's Caddy, plain HTTP on loopback.
func TestCaddyBesideApp(t *testing.T) {
	caddy := findTool(t, "caddy", "apt-get install caddy (Debian's package)")
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		s := startBesideApp(t, b)
		dir := t.TempDir()
		addr := freePort(t)
		site := strings.NewReplacer(
			guideApp, s.app.Listener.Addr().String(),
			guideTrap, s.env.Trap.Listener.Addr().String(),
			"www.example.com {", "http://"+addr+" {",
		).Replace(guideBlock(t, "caddyfile"))
		conf := "{\n\tadmin off\n\tauto_https off\n}\n\n" + site
		confPath := filepath.Join(dir, "Caddyfile")
		if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(caddy, "run", "--config", confPath, "--adapter", "caddyfile")
		cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
		startProxy(t, cmd, addr, filepath.Join(dir, "caddy.log"))
		s.check(t, addr)
	})
}
