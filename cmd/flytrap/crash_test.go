package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// runBinary starts the built flytrap on db and returns its API base URL, the admin key
// printed on a first start (empty on later starts), and the process.
func runBinary(t *testing.T, bin, db, key string, extra ...string) (string, string, *exec.Cmd) {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(bin, append([]string{"--db", db, "--api-addr", addr, "--trap-addr", freeAddr(t), "--webhook-allow-private"}, extra...)...)
	cmd.Env = withoutFlytrapVars(os.Environ())
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := bannerKey.FindStringSubmatch(stdout.String()); m != nil && key == "" {
			key = m[1]
		}
		if key != "" && healthy(base) {
			return base, key, cmd
		}
		if time.Now().After(deadline) {
			t.Fatalf("flytrap not ready after 30s\nstdout: %s\nstderr: %s", &stdout, &stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWebhookDeliveriesSurviveKill kills flytrap (SIGKILL) while deliveries wait for
// their retry, restarts it on the same database, and checks every event reaches the
// receiver: the outbox and the retry schedule are in the database, not in memory.
func TestWebhookDeliveriesSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the build-kill-restart test of the flytrap binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the binary with: %v", err)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "flytrap")
	if out, err := exec.CommandContext(t.Context(), goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	var failing atomic.Bool
	failing.Store(true)
	var mu sync.Mutex
	received := map[string]bool{}
	attempts := atomic.Int64{}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempts.Add(1)
		if failing.Load() {
			http.Error(w, "not now", http.StatusInternalServerError)
			return
		}
		mu.Lock()
		received[r.Header.Get("webhook-id")] = true
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	db := filepath.Join(tmp, "crash.db")
	base, key, cmd := runBinary(t, bin, db, "")
	q := func(query string) map[string]any {
		t.Helper()
		r := graphql(t, http.DefaultClient, base, key, query)
		if r.status != http.StatusOK || len(r.Errors) > 0 {
			t.Fatalf("GraphQL: %d %s", r.status, r.raw)
		}
		return r.Data
	}
	q(fmt.Sprintf(`mutation { createWebhookEndpoint(input: {url: %q, eventTypes: ["trap.created"]}) { secret } }`, receiver.URL))
	const events = 5
	for i := range events {
		q(fmt.Sprintf(`mutation { createTrap(input: {name: "t%d", type: api}) { id } }`, i))
	}
	// Wait until every delivery's failed attempt is recorded: it then waits for its retry,
	// held by no lease. (An attempt in flight at the kill is retried when its lease expires.)
	endpoint := ft.Dig(q(`{ webhookEndpoints(first: 1) { edges { node { id } } } }`), "webhookEndpoints", "edges", 0, "node", "id")
	deadline := time.Now().Add(30 * time.Second)
	for {
		d := q(fmt.Sprintf(`{ webhookDeliveries(endpointID: %q, first: 100) { edges { node { attemptCount } } } }`, endpoint))
		edges, _ := ft.Dig(d, "webhookDeliveries", "edges").([]any)
		waiting := 0
		for _, e := range edges {
			if n, _ := ft.Dig(e, "node", "attemptCount").(float64); n >= 1 {
				waiting++
			}
		}
		if waiting == events {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d deliveries have a recorded attempt after 30s (%d requests seen)", waiting, events, attempts.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = cmd.Process.Wait()

	failing.Store(false)
	runBinary(t, bin, db, key)
	deadline = time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		n := len(received)
		mu.Unlock()
		if n == events {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart the receiver got %d of %d events", n, events)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
