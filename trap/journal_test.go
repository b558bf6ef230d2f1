package trap_test

// The hit journal: hits answered once journaled survive an engine that never applied
// them (a killed process), are applied exactly once when the next engine replays the
// journal — a replay of segments whose hits are stored already adds nothing, counters
// included — and the journal sheds past its bound.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent/hit"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/store"
	"github.com/flytrap/flytrap/trap"
)

// journalEngine is an engine over db whose answers wait only for the journal in dir.
func journalEngine(t *testing.T, db *store.DB, dir string, tweak ...func(*trap.Config)) *trap.Engine {
	t.Helper()
	cfg := trap.DefaultConfig()
	cfg.Journal, cfg.JournalSegment = dir, 16<<10 // small segments: several, rotated under load
	for _, f := range tweak {
		f(&cfg)
	}
	e, err := trap.New(context.Background(), cfg, db.Trap, db.Dialect, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// segments lists the journal's segment files in dir.
func segments(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.jnl"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// runUntil runs e until done says so (or 60 s pass), then stops it and waits for it.
func runUntil(t *testing.T, e *trap.Engine, done func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	go e.Run(ctx)
	deadline := time.Now().Add(60 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("the engine did not get there within 60 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-e.Done()
}

func TestJournalReplayExactlyOnce(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		db, err := store.Open(context.Background(), b.DSN(t))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		seedTrap(t, db, "/internal/docs/billing")
		dir := filepath.Join(t.TempDir(), "hits")

		// An engine that journals and never applies: the process killed before its writer ran.
		first := journalEngine(t, db, dir)
		srv := httptest.NewServer(first)
		client := trapClient(8)
		const visitors, each = 12, 25
		want := map[string]int{}
		for i := range visitors * each {
			v := i % visitors
			ua := fmt.Sprintf("Mozilla/5.0 (journal visitor %d) Chrome/131.0 Safari/537.36", v)
			path := "/internal/docs/billing"
			if i >= visitors && i%3 == 0 {
				path = fmt.Sprintf("/missing/%d", i) // recorded: the visitor's session is journaled, not yet stored
			}
			st, _, _, err := fetch(client, srv.URL+path, ua, "")
			if err != nil || (st != http.StatusOK && st != http.StatusNotFound) {
				t.Fatalf("GET %s: %d %v", path, st, err)
			}
			want[ua]++
		}
		srv.Close()
		first.CloseJournal()
		if n := db.Client.Hit.Query().CountX(ft.System()); n != 0 {
			t.Fatalf("%d hits stored by an engine that never ran its writer", n)
		}
		segs := segments(t, dir)
		if len(segs) < 2 {
			t.Fatalf("%d segments: want several (16 KiB each)", len(segs))
		}
		// The last write was cut short: half a record, never acknowledged.
		f, err := os.OpenFile(segs[len(segs)-1], os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte{200, 0, 0, 0, 1, 2, 3, 4, '{', '"'})
		f.Close()
		copyDir := filepath.Join(t.TempDir(), "copy")
		copyFiles(t, dir, copyDir)

		// The next engine replays the journal: every hit stored once, counters as a recount.
		second := journalEngine(t, db, dir)
		runUntil(t, second, func() bool { _, rec, _ := second.Counts(); return rec >= visitors*each })
		checkStoredOnce(t, db, want)
		before := checkCounters(t, db.Client)
		if left := segments(t, dir); len(left) != 0 {
			t.Errorf("segments left after the replay: %q", left)
		}
		if _, replayed := second.JournalStats(); replayed != visitors*each {
			t.Errorf("replayed %d hits, want %d", replayed, visitors*each)
		}

		// Replaying the same segments again (their hits applied, the files left behind by a
		// process killed before it removed them) stores nothing twice and counts nothing twice.
		third := journalEngine(t, db, copyDir)
		runUntil(t, third, func() bool { return true })
		checkStoredOnce(t, db, want)
		after := checkCounters(t, db.Client)
		if !after.Equal(before) {
			t.Errorf("a second replay changed the counters:\n%s", after.Diff(before))
		}
		if _, replayed := third.JournalStats(); replayed != 0 {
			t.Errorf("a replay of stored hits applied %d", replayed)
		}
		if left := segments(t, copyDir); len(left) != 0 {
			t.Errorf("segments left after the second replay: %q", left)
		}
	})
}

// checkStoredOnce fails unless the journal visitors' hits are stored as many times as want says.
func checkStoredOnce(t *testing.T, db *store.DB, want map[string]int) {
	t.Helper()
	got := hitsByUA(t, db)
	for ua, n := range want {
		if got[ua] != n {
			t.Errorf("%q: %d hits stored, want %d", ua, got[ua], n)
		}
	}
	ids := db.Client.Hit.Query().Select(hit.FieldID).StringsX(ft.System())
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("hit %s stored twice", id)
		}
		seen[id] = true
	}
}

func copyFiles(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range segments(t, from) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, filepath.Base(p)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// A journal holding its bound answers 503 with Retry-After and keeps nothing; a second
// engine cannot open a journal another holds.
func TestJournalBoundAndLock(t *testing.T) {
	db, err := store.Open(context.Background(), ft.SQLiteDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	seedTrap(t, db, "/internal/docs/billing")
	dir := filepath.Join(t.TempDir(), "hits")
	e := journalEngine(t, db, dir, func(c *trap.Config) { c.JournalMax = 8 << 10 })
	if _, err := trap.New(context.Background(), trap.Config{Journal: dir, QueueSize: 1, BatchSize: 1}, db.Trap, db.Dialect,
		slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Errorf("a second engine on the journal: %v", err)
	}
	srv := httptest.NewServer(e)
	defer srv.Close()
	client := trapClient(1)
	ok, shed := 0, 0
	for i := range 40 {
		st, h, _, err := fetch(client, srv.URL+"/internal/docs/billing", fmt.Sprintf("bound %d", i), "")
		switch {
		case err != nil:
			t.Fatal(err)
		case st == http.StatusOK:
			ok++
		case st == http.StatusServiceUnavailable && h.Get("Retry-After") != "":
			shed++
		default:
			t.Fatalf("status %d", st)
		}
	}
	if ok == 0 || shed == 0 {
		t.Fatalf("%d answered, %d shed: want both past an 8 KiB journal", ok, shed)
	}
	runUntil(t, e, func() bool { _, rec, _ := e.Counts(); return rec >= int64(ok) })
	if n := db.Client.Hit.Query().CountX(ft.System()); n != ok {
		t.Errorf("%d hits stored, %d answered 200", n, ok)
	}
}

// Two instances on one PostgreSQL database, each answering once its hits are journaled in a
// journal of its own, serve the same visitors (a token one served comes back to the
// other): once both have applied their journals, every hit answered is stored once and the
// counters equal a recount.
func TestJournalTwoInstances(t *testing.T) {
	dsn := ft.PostgresDSN(t)
	a := ft.StartOn(t, dsn, trustLocalProxy, ft.JournalAck)
	b := ft.StartOn(t, dsn, trustLocalProxy, ft.JournalAck)
	if a.Config.Trap.Journal == b.Config.Trap.Journal {
		t.Fatalf("both instances journal in %s", a.Config.Trap.Journal)
	}
	tn := a.Tenant("acme")
	paths := []string{"/acme/docs/0", "/acme/docs/1"}
	for _, p := range paths {
		a.MustGraphQL(tn.ReadWrite, `mutation($p: String!) { createTrap(input:{name:"t", type: page, path: $p}) { id } }`, map[string]any{"p": p})
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range paths { // B learns of the traps through the database's notifications
		for {
			status, _, _, err := fetch(trapClient(1), b.Trap.URL+p, "probe", "198.18.9.9")
			if err == nil && status == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance B never served %s: %d %v", p, status, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	envs := []*ft.Env{a, b}
	key := func(i int) []byte { return envs[i].Server.Engine().Key() }
	visitMix(t, []string{a.Trap.URL, b.Trap.URL}, key, paths, 800, 8, 3)
	var received int64
	for _, env := range envs {
		e := env.Server.Engine()
		deadline := time.Now().Add(60 * time.Second)
		for {
			rec, stored, shed := e.Counts()
			if stored == rec-shed {
				received += stored
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("an instance applied %d of %d journaled hits in 60 s", stored, rec-shed)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if n := a.DB.Client.Hit.Query().CountX(ft.System()); int64(n) != received {
		t.Errorf("%d hits stored, the instances applied %d", n, received)
	}
	checkCounters(t, a.DB.Client)
}

// A visitor who follows a page's hidden link before the page's hit is stored (answers go
// out once journaled) still gets the callback: the writer finds the token's hit earlier in
// the same batch. The two hits are journaled by an engine that never applies them, and
// replayed in one batch.
func TestJournalTokenOfAHitInTheSameBatch(t *testing.T) {
	db, err := store.Open(context.Background(), ft.SQLiteDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	seedTrap(t, db, "/internal/docs/billing")
	dir := filepath.Join(t.TempDir(), "hits")
	first := journalEngine(t, db, dir)
	srv := httptest.NewServer(first)
	client := trapClient(1)
	const ua = "Mozilla/5.0 (same batch) Chrome/131.0 Safari/537.36"
	_, _, page, err := fetch(client, srv.URL+"/internal/docs/billing", ua, "")
	if err != nil {
		t.Fatal(err)
	}
	var callback string
	for _, u := range regexURLs(page) {
		if refs := decoy.FindTokens(first.Key(), u); len(refs) == 1 && refs[0].Purpose == decoy.Callback {
			callback = u
			break
		}
	}
	if callback == "" {
		t.Fatal("the page has no hidden callback link")
	}
	if st, _, _, err := fetch(client, srv.URL+callback, ua, ""); err != nil || st != http.StatusOK {
		t.Fatalf("GET %s: %d %v", callback, st, err)
	}
	srv.Close()
	first.CloseJournal()

	second := journalEngine(t, db, dir)
	runUntil(t, second, func() bool { _, rec, _ := second.Counts(); return rec >= 2 })
	ss := db.Client.Session.Query().AllX(ft.System())
	if len(ss) != 1 || ss[0].HitCount != 2 {
		t.Fatalf("%d sessions (want one of 2 hits): %+v", len(ss), ss)
	}
	if !slices.Contains(ss[0].SignalsFired, detect.SignalCallbackHit) {
		t.Errorf("the callback followed within the batch fired %q, want %s", ss[0].SignalsFired, detect.SignalCallbackHit)
	}
}

// A planted AWS access key id that comes back before the hit that served it is stored
// (the listener looks such keys up while answering) is still recognised: the engine
// knows its journaled hits not yet applied.
func TestJournalAWSKeyOfAnUnappliedHit(t *testing.T) {
	db, err := store.Open(context.Background(), ft.SQLiteDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	seedTrap(t, db, "/internal/docs/billing")
	dir := filepath.Join(t.TempDir(), "hits")
	first := journalEngine(t, db, dir)
	srv := httptest.NewServer(first)
	defer srv.Close()
	client := trapClient(1)
	const ua = "Mozilla/5.0 (aws key) Chrome/131.0 Safari/537.36"
	_, _, page, err := fetch(client, srv.URL+"/internal/docs/billing", ua, "")
	if err != nil {
		t.Fatal(err)
	}
	var hitID string
	for _, u := range regexURLs(page) {
		if refs := decoy.FindTokens(first.Key(), u); len(refs) == 1 {
			hitID = refs[0].HitID
			break
		}
	}
	keyID := decoy.AWSKeyID(first.Key(), hitID, 7)
	if hitID == "" || keyID == "" {
		t.Fatalf("no token in the page (hit %q, key %q)", hitID, keyID)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
	req.Header.Set("User-Agent", "aws-cli/2.15.0")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+keyID+"/20261127/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00")
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	srv.Close()
	first.CloseJournal()

	second := journalEngine(t, db, dir)
	runUntil(t, second, func() bool { _, rec, _ := second.Counts(); return rec >= 2 })
	ss := db.Client.Session.Query().AllX(ft.System())
	if len(ss) != 1 || ss[0].HitCount != 2 || !slices.Contains(ss[0].SignalsFired, detect.SignalCredentialUsed) {
		for _, s := range ss {
			t.Logf("session %s: %d hits, fired %q", s.ID, s.HitCount, s.SignalsFired)
		}
		t.Fatalf("want one session of 2 hits that fired %s", detect.SignalCredentialUsed)
	}
}

// Past half its queue the listener answers a journaled hit only once it is applied (the
// writer is behind: a client slows down to its pace rather than filling the queue and being
// shed): with the writer stopped, the first half is answered at once, the next waits and,
// never applied within the write timeout, is answered 503; every journaled hit is stored
// once the writer runs.
func TestJournalBackpressurePastHalfTheQueue(t *testing.T) {
	db, err := store.Open(context.Background(), ft.SQLiteDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	seedTrap(t, db, "/internal/docs/billing")
	e := journalEngine(t, db, filepath.Join(t.TempDir(), "hits"), func(c *trap.Config) {
		c.QueueSize, c.WriteTimeout = 8, 300*time.Millisecond
	})
	srv := httptest.NewServer(e)
	defer srv.Close()
	client := trapClient(1)
	for i := range 5 {
		st, h, _, err := fetch(client, srv.URL+"/internal/docs/billing", fmt.Sprintf("behind %d", i), "")
		switch {
		case err != nil:
			t.Fatal(err)
		case i < 4 && st != http.StatusOK:
			t.Fatalf("hit %d with the queue under half full: %d, want 200 at once", i, st)
		case i == 4 && (st != http.StatusServiceUnavailable || h.Get("Retry-After") == ""):
			t.Fatalf("hit %d past half the queue, the writer stopped: %d, want 503 after waiting for its apply", i, st)
		}
	}
	runUntil(t, e, func() bool { _, rec, _ := e.Counts(); return rec >= 5 })
	if n := db.Client.Hit.Query().CountX(ft.System()); n != 5 {
		t.Errorf("%d hits stored, want the 5 journaled", n)
	}
}
