package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flytrap/flytrap/ent/hit"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/store"
	"github.com/flytrap/flytrap/tally"
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
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m := bannerKey.FindStringSubmatch(stdout.String()); m != nil && key == "" {
			key = m[1]
		}
		if key != "" && healthy(base) {
			return base, key, cmd
		}
		if time.Now().After(deadline) {
			t.Fatalf("flytrap not ready after 60s\nstdout: %s\nstderr: %s", &stdout, &stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// buildBinary builds flytrap into dir (skipping t without a go command).
func buildBinary(t *testing.T, dir string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the binary with: %v", err)
	}
	bin := filepath.Join(dir, "flytrap")
	if out, err := exec.CommandContext(t.Context(), goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestWebhookDeliveriesSurviveKill kills flytrap (SIGKILL) while deliveries wait for
// their retry, restarts it on the same database, and checks every event reaches the
// receiver: the outbox and the retry schedule are in the database, not in memory.
func TestWebhookDeliveriesSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the build-kill-restart test of the flytrap binary")
	}
	tmp := t.TempDir()
	bin := buildBinary(t, tmp)

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

// TestHitsSurviveKill kills flytrap (SIGKILL) at a random moment while 8 clients request
// a trap page, restarts it on the same database and hit journal, and does it again, many
// rounds (FLYTRAP_KILL_ROUNDS, default 8), on each database. Then: every hit answered 200
// is stored exactly once, no hit is stored twice (answered or not: a request killed after
// its journal write and before its answer may be stored), each session's hit count is its
// hits, and the counters equal a recount — a hit replayed after it was applied counts nothing.
func TestHitsSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the build-kill-restart test of the flytrap binary")
	}
	bin := buildBinary(t, t.TempDir())
	rounds := 8
	if n, err := strconv.Atoi(os.Getenv("FLYTRAP_KILL_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		trapAddr := freeAddr(t)
		args := []string{"--trap-addr", trapAddr, "--hit-journal", filepath.Join(t.TempDir(), "hits")}
		base, key, cmd := runBinary(t, bin, dsn, "", args...)
		r := graphql(t, http.DefaultClient, base, key, `mutation { createTrap(input: {name: "kill", type: page}) { path } }`)
		path, _ := ft.Dig(r.Data, "createTrap", "path").(string)
		if path == "" {
			t.Fatalf("createTrap: %d %s", r.status, r.raw)
		}
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: 10 * time.Second}
		var (
			mu    sync.Mutex
			acked = map[string]bool{} // queries answered 200
		)
		for round := range rounds {
			if round > 0 {
				_, _, cmd = runBinary(t, bin, dsn, key, args...)
			}
			var wg sync.WaitGroup
			stop := make(chan struct{})
			answered := atomic.Int64{}
			for w := range 8 {
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						q := fmt.Sprintf("r=%d&w=%d&i=%d", round, w, i)
						req, _ := http.NewRequest(http.MethodGet, "http://"+trapAddr+path+"?"+q, nil)
						req.Header.Set("User-Agent", fmt.Sprintf("Mozilla/5.0 (kill test worker %d) Chrome/131.0 Safari/537.36", w))
						res, err := client.Do(req)
						if err != nil {
							time.Sleep(time.Millisecond)
							continue
						}
						_, _ = io.Copy(io.Discard, res.Body)
						res.Body.Close()
						if res.StatusCode == http.StatusOK {
							answered.Add(1)
							mu.Lock()
							acked[q] = true
							mu.Unlock()
						}
					}
				})
			}
			for answered.Load() < 20 { // under load before the kill
				time.Sleep(time.Millisecond)
			}
			time.Sleep(time.Duration(rand.IntN(400)) * time.Millisecond)
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_, _ = cmd.Process.Wait()
			close(stop)
			wg.Wait()
		}

		// The last start replays the last journal; a graceful stop then applies the rest.
		_, _, cmd = runBinary(t, bin, dsn, key, args...)
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("flytrap after SIGTERM: %v", err)
		}
		lost, stored := checkHitsStored(t, dsn, acked, rounds)
		t.Logf("%d rounds: %d hits answered 200, %d stored (%d lost)", rounds, len(acked), stored, lost)
	})
}

// TestHitsSurviveKillTwoInstances runs two flytrap instances on one PostgreSQL database,
// each with its own hit journal, while 8 clients request a trap page from both (each
// visitor, an address and a user agent, from both instances, so both write the same
// sessions), and kills one of them or both (SIGKILL) at a random moment, restarting what it
// killed while the other goes on, many rounds (FLYTRAP_KILL_ROUNDS, default 8). Then, as
// TestHitsSurviveKill checks one instance: every hit answered 200 is stored exactly once,
// none twice, each session's hit count is its hits, and the counters equal a recount.
func TestHitsSurviveKillTwoInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the build-kill-restart test of the flytrap binary")
	}
	bin := buildBinary(t, t.TempDir())
	rounds := 8
	if n, err := strconv.Atoi(os.Getenv("FLYTRAP_KILL_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		if b.Name == "sqlite" {
			t.Skip("several instances share a database on PostgreSQL only (README, \"Several flytrap instances may run on one PostgreSQL database\"): a SQLite file is one instance's")
		}
		dsn := b.DSN(t)
		type instance struct {
			trapAddr string
			args     []string
			cmd      *exec.Cmd
			answered atomic.Int64 // answered 200 since its last start
		}
		var inst [2]*instance
		var key, path string
		for i := range inst {
			in := &instance{trapAddr: freeAddr(t)}
			in.args = []string{"--trap-addr", in.trapAddr, "--hit-journal", filepath.Join(t.TempDir(), fmt.Sprintf("hits-%d", i))}
			var base string
			base, key, in.cmd = runBinary(t, bin, dsn, key, in.args...)
			if i == 0 {
				r := graphql(t, http.DefaultClient, base, key, `mutation { createTrap(input: {name: "kill", type: page}) { path } }`)
				if path, _ = ft.Dig(r.Data, "createTrap", "path").(string); path == "" {
					t.Fatalf("createTrap: %d %s", r.status, r.raw)
				}
			}
			inst[i] = in
		}

		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: 10 * time.Second}
		var (
			mu    sync.Mutex
			acked = map[string]bool{} // queries answered 200
		)
		var wg sync.WaitGroup
		stop := make(chan struct{})
		stopWorkers := sync.OnceFunc(func() { close(stop); wg.Wait() })
		defer stopWorkers() // also when the test fails early
		for w := range 8 {
			in := inst[w%2]
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					q := fmt.Sprintf("w=%d&i=%d", w, i)
					req, _ := http.NewRequest(http.MethodGet, "http://"+in.trapAddr+path+"?"+q, nil)
					// Workers w and w+1 are one visitor, one on each instance.
					req.Header.Set("User-Agent", fmt.Sprintf("Mozilla/5.0 (kill test visitor %d) Chrome/131.0 Safari/537.36", w/2))
					res, err := client.Do(req)
					if err != nil {
						time.Sleep(time.Millisecond)
						continue
					}
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode == http.StatusOK {
						in.answered.Add(1)
						mu.Lock()
						acked[q] = true
						mu.Unlock()
					}
				}
			})
		}
		kills := 0
		for round := range rounds {
			for i, in := range inst { // both under load before the kill
				waitAnswered(t, &in.answered, fmt.Sprintf("instance %d", i))
			}
			time.Sleep(time.Duration(rand.IntN(400)) * time.Millisecond)
			victims := []*instance{inst[round%2]} // one while the other runs, then the other
			if round%3 == 2 {
				victims = inst[:]
			}
			for _, in := range victims {
				if err := in.cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				_, _ = in.cmd.Process.Wait()
				kills++
			}
			time.Sleep(time.Duration(rand.IntN(200)) * time.Millisecond) // the other goes on alone
			// Restarted, it replays its journal while the other writes.
			for _, in := range victims {
				in.answered.Store(0)
				_, _, in.cmd = runBinary(t, bin, dsn, key, in.args...)
			}
		}
		for i, in := range inst {
			waitAnswered(t, &in.answered, fmt.Sprintf("instance %d", i))
		}
		stopWorkers()

		// A graceful stop applies what each journal holds.
		for _, in := range inst {
			if err := in.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
		for _, in := range inst {
			if err := in.cmd.Wait(); err != nil {
				t.Fatalf("flytrap after SIGTERM: %v", err)
			}
		}
		lost, stored := checkHitsStored(t, dsn, acked, kills)
		t.Logf("%d rounds, %d kills of two instances: %d hits answered 200, %d stored (%d lost)", rounds, kills, len(acked), stored, lost)
	})
}

// waitAnswered waits until 20 requests to an instance were answered 200 (a minute at most).
func waitAnswered(t *testing.T, answered *atomic.Int64, what string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for answered.Load() < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("%s answered %d requests 200 in a minute", what, answered.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

// checkHitsStored checks the database at dsn after kills: every hit answered 200 (acked,
// by query) stored exactly once, no hit stored twice, each session's hit count its hits,
// the counters equal to a recount. It returns the answered hits not stored once, and the
// hits stored.
func checkHitsStored(t *testing.T, dsn string, acked map[string]bool, kills int) (lost, total int) {
	t.Helper()
	db, err := store.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := ft.System()
	queries := db.Client.Hit.Query().Select(hit.FieldQuery).StringsX(ctx)
	stored := map[string]int{}
	for _, q := range queries {
		stored[q]++
	}
	for q, n := range stored {
		if n > 1 {
			t.Errorf("hit %q stored %d times", q, n)
		}
	}
	for q := range acked {
		if stored[q] != 1 {
			lost++
			if lost < 10 {
				t.Errorf("hit %q answered 200 but stored %d times", q, stored[q])
			}
		}
	}
	sessions := db.Client.Session.Query().AllX(ctx)
	inSessions := 0
	for _, s := range sessions {
		n := db.Client.Hit.Query().Where(hit.SessionID(s.ID)).CountX(ctx)
		if s.HitCount != n {
			t.Errorf("session %s counts %d hits, has %d", s.ID, s.HitCount, n)
		}
		inSessions += n
	}
	if inSessions != len(queries) {
		t.Errorf("%d hits in sessions, %d stored", inSessions, len(queries))
	}
	have, err := tally.Stored(ctx, db.Client)
	if err != nil {
		t.Fatal(err)
	}
	recount, err := tally.Recount(ctx, db.Client)
	if err != nil {
		t.Fatal(err)
	}
	if !have.Equal(recount) {
		t.Errorf("counters vs a recount after %d kills:\n%s", kills, have.Diff(recount))
	}
	return lost, len(queries)
}
