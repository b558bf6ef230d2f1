package trap_test

// No hit lost: thousands of concurrent hits are all counted, a graceful shutdown writes
// the hits of the requests it answered, and overload is shed visibly (503 + Retry-After)
// and never by answering 200 for a hit that was not written.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/session"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
	"github.com/flytrap/flytrap/store"
)

// trapClient is an HTTP client that keeps enough connections open for many goroutines.
func trapClient(conns int) *http.Client {
	return &http.Client{
		Transport: &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: 30 * time.Second},
		Timeout:   30 * time.Second,
	}
}

// fetch sends a GET with a user agent and forwarded address and returns the status,
// the headers and the body.
func fetch(client *http.Client, url, ua, ip string) (int, http.Header, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, "", err
	}
	req.Header.Set("User-Agent", ua)
	if ip != "" {
		req.Header.Set("X-Forwarded-For", ip)
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b), err
}

// TestConcurrentHitsAllCounted sends 3000 requests from 50 goroutines on behalf of 10
// visitors (the trap page, a hidden callback of it, unknown paths) and checks that every
// answered request is a hit: the sessions' hit counts, the hit rows, the engine's own
// count and the overview all equal the number of 200 and 404 answers.
func TestConcurrentHitsAllCounted(t *testing.T) {
	const (
		visitors   = 10
		goroutines = 50
		perG       = 60 // 3000 requests
	)
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, trustLocalProxy, func(c *server.Config) { c.Trap.QueueSize = 4 * goroutines })
		tn := env.Tenant("acme")
		env.MustGraphQL(tn.ReadWrite, `mutation { createTrap(input:{name:"Billing runbook", type: page, path:"/internal/docs/billing"}) { id } }`, nil)
		client := trapClient(goroutines)
		page := env.Trap.URL + "/internal/docs/billing"

		// Each visitor opens the page first: from then on its 404s are recorded too.
		type vis struct{ ua, ip, callback string }
		vs := make([]vis, visitors)
		for i := range vs {
			vs[i] = vis{ua: fmt.Sprintf("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.%d.0 Safari/537.36", i),
				ip: fmt.Sprintf("198.18.0.%d", i+1)}
			status, _, body, err := fetch(client, page, vs[i].ua, vs[i].ip)
			if err != nil || status != 200 {
				t.Fatalf("visitor %d: %d %v", i, status, err)
			}
			for _, u := range regexURLs(body) {
				if refs := decoy.FindTokens(env.Server.Engine().Key(), u); len(refs) == 1 && refs[0].Purpose == decoy.Callback {
					vs[i].callback = env.Trap.URL + u
					break
				}
			}
			if vs[i].callback == "" {
				t.Fatalf("visitor %d: no callback URL in the page", i)
			}
		}
		var ok, notFound, other atomic.Int64
		ok.Add(visitors)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range goroutines {
			wg.Go(func() {
				v := vs[g%visitors]
				<-start
				for i := range perG {
					url := page
					switch i % 3 {
					case 1:
						url = v.callback
					case 2:
						url = fmt.Sprintf("%s/missing/%d", env.Trap.URL, i%12)
					}
					status, _, _, err := fetch(client, url, v.ua, v.ip)
					switch {
					case err != nil:
						t.Errorf("GET %s: %v", url, err)
						return
					case status == http.StatusOK:
						ok.Add(1)
					case status == http.StatusNotFound:
						notFound.Add(1)
					default:
						other.Add(1)
						t.Errorf("GET %s: status %d", url, status)
					}
				}
			})
		}
		began := time.Now()
		close(start)
		wg.Wait()
		elapsed := time.Since(began)
		answered := int(ok.Load() + notFound.Load())
		if other.Load() != 0 || answered != visitors+goroutines*perG {
			t.Fatalf("answered %d (200: %d, 404: %d), other %d; want %d answered", answered, ok.Load(), notFound.Load(), other.Load(), visitors+goroutines*perG)
		}

		ctx := ft.System()
		sessions, err := env.DB.Client.Session.Query().Where(session.OrgID(tn.Org.ID)).All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0
		for _, s := range sessions {
			sum += s.HitCount
		}
		rows, err := env.DB.Client.Hit.Query().Where(hit.OrgID(tn.Org.ID)).Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		written, shed := env.Server.Engine().Stats()
		if len(sessions) != visitors {
			t.Errorf("%d sessions, want one per visitor: %d", len(sessions), visitors)
		}
		if sum != answered || rows != answered || int(written) != answered || shed != 0 {
			t.Errorf("answered %d; sessions' hit_count sum %d, hit rows %d, engine wrote %d, shed %d", answered, sum, rows, written, shed)
		}
		d := env.MustGraphQL(tn.ReadOnly, `{ analytics { overview { totalHits24h } } }`, nil)
		if got := int(ft.Dig(d, "analytics", "overview", "totalHits24h").(float64)); got != answered {
			t.Errorf("totalHits24h %d, want %d", got, answered)
		}
		t.Logf("%d requests from %d goroutines in %v (%.0f/s): 200 %d, 404 %d; %d sessions",
			answered, goroutines, elapsed.Round(time.Millisecond), float64(answered)/elapsed.Seconds(), ok.Load(), notFound.Load(), len(sessions))
	})
}

// seedTrap creates an organization, its site and one page trap directly in the database.
func seedTrap(t *testing.T, db *store.DB, path string) {
	t.Helper()
	ctx := ft.System()
	org, err := db.Client.Organization.Create().SetName("acme").Save(ctx)
	if err != nil {
		t.Fatal(err)
	}
	site, err := db.Client.Site.Create().SetOrgID(org.ID).SetName("default").Save(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.Client.Tx(ctx) // trap changes append their event in the same transaction
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Trap.Create().SetOrgID(org.ID).SetSiteID(site.ID).SetName("Billing runbook").SetType("page").SetPath(path).Save(ctx); err != nil {
		tx.Rollback()
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// freeAddr returns a local address with a port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// hitsByUA counts the stored hits of each user agent.
func hitsByUA(t *testing.T, db *store.DB) map[string]int {
	t.Helper()
	uas, err := db.Client.Hit.Query().Select(hit.FieldUserAgent).Strings(ft.System())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, ua := range uas {
		out[ua]++
	}
	return out
}

// TestGracefulShutdownWritesAnsweredHits runs a real server (server.Run on local ports,
// a SQLite file), keeps 20 clients requesting the trap page, stops the server while
// requests are in flight, and reopens the database: every request answered 200 has its
// hit, no request answered otherwise has one, and nothing else was written.
func TestGracefulShutdownWritesAnsweredHits(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "shutdown.db")
	db, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	seedTrap(t, db, "/internal/docs/billing")
	cfg := server.DefaultConfig()
	cfg.APIAddr, cfg.TrapAddr = "127.0.0.1:0", freeAddr(t) // the two must differ
	cfg.RateLimit, cfg.RateBurst = 1e6, 1e6
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	srv, err := server.New(ctx, cfg, db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	addr := make(chan net.Addr, 1)
	runErr := make(chan error, 1)
	go func() { runErr <- srv.Run(ctx, func(_, trap net.Addr) { addr <- trap }) }()
	var url string
	select {
	case a := <-addr:
		url = "http://" + a.String() + "/internal/docs/billing"
	case err := <-runErr:
		t.Fatalf("run: %v", err)
	}

	const clients = 20
	client := trapClient(clients)
	var (
		mu       sync.Mutex
		status   = map[string]int{} // user agent → status (0: transport error)
		answered atomic.Int64
		late     atomic.Int64 // answered 200 after the stop signal: in flight when it came
		stopping = make(chan struct{})
		wg       sync.WaitGroup
	)
	for c := range clients {
		wg.Go(func() {
			for i := 0; ; i++ {
				ua := fmt.Sprintf("Mozilla/5.0 (shutdown client %d request %d) Chrome/131.0 Safari/537.36", c, i)
				st, _, _, err := fetch(client, url, ua, "")
				if err != nil {
					st = 0
				}
				select {
				case <-stopping:
					if st == http.StatusOK {
						late.Add(1)
					}
				default:
				}
				mu.Lock()
				status[ua] = st
				mu.Unlock()
				answered.Add(1)
				select {
				case <-stopping:
					if err != nil || i > 100_000 {
						return // the listener is gone
					}
				default:
				}
			}
		})
	}
	// Stop once the server is busy: 300 answers in.
	for answered.Load() < 300 {
		time.Sleep(time.Millisecond)
	}
	close(stopping)
	stop()
	select {
	case err := <-runErr:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop within 30 s")
	}
	wg.Wait()
	written, _ := srv.Engine().Stats()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stored := hitsByUA(t, db)
	counts := map[int]int{}
	total := 0
	for ua, st := range status {
		counts[st]++
		n := stored[ua]
		total += n
		switch {
		case st == http.StatusOK && n != 1:
			t.Errorf("%q was answered 200 but has %d hits", ua, n)
		case st != http.StatusOK && n != 0:
			t.Errorf("%q was answered %d (0: no answer) but has %d hits", ua, st, n)
		}
		if st != http.StatusOK && st != http.StatusServiceUnavailable && st != 0 {
			t.Errorf("%q: status %d", ua, st)
		}
	}
	rows := 0
	for _, n := range stored {
		rows += n
	}
	if rows != counts[http.StatusOK] || total != rows || int(written) != rows {
		t.Errorf("%d hit rows (%d of the requests', engine wrote %d), %d requests answered 200", rows, total, written, counts[http.StatusOK])
	}
	if late.Load() == 0 {
		t.Error("no request was answered after the stop signal: the test did not stop the server under load")
	}
	t.Logf("requests: 200 %d (%d after the stop signal), 503 %d, no answer %d; hits written %d", counts[200], late.Load(), counts[503], counts[0], rows)
}

// TestOverloadShedsVisibly fills a one-place hit queue with 200 simultaneous requests:
// each is answered 200 with its hit written, or 503 with Retry-After and no hit.
func TestOverloadShedsVisibly(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, func(c *server.Config) { c.Trap.QueueSize = 1 })
		tn := env.Tenant("acme")
		env.MustGraphQL(tn.ReadWrite, `mutation { createTrap(input:{name:"Billing runbook", type: page, path:"/internal/docs/billing"}) { id } }`, nil)
		const n = 200
		client := trapClient(n)
		url := env.Trap.URL + "/internal/docs/billing"
		type answer struct {
			status int
			header http.Header
			body   string
			err    error
		}
		answers := make([]answer, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				st, h, body, err := fetch(client, url, fmt.Sprintf("Mozilla/5.0 (overload %d) Chrome/131.0 Safari/537.36", i), "")
				answers[i] = answer{st, h, body, err}
			})
		}
		close(start)
		wg.Wait()

		stored := hitsByUA(t, env.DB)
		counts := map[int]int{}
		for i, a := range answers {
			ua := fmt.Sprintf("Mozilla/5.0 (overload %d) Chrome/131.0 Safari/537.36", i)
			if a.err != nil {
				t.Errorf("request %d: %v", i, a.err)
				continue
			}
			counts[a.status]++
			switch a.status {
			case http.StatusOK:
				if stored[ua] != 1 {
					t.Errorf("request %d answered 200 with %d hits: a 200 must mean its hit is written", i, stored[ua])
				}
			case http.StatusServiceUnavailable:
				if a.header.Get("Retry-After") == "" {
					t.Errorf("request %d: 503 without Retry-After", i)
				}
				checkBland(t, "503", reply{status: a.status, header: a.header, body: a.body})
				if stored[ua] != 0 {
					t.Errorf("request %d was shed (503) but has %d hits", i, stored[ua])
				}
			default:
				t.Errorf("request %d: status %d, want 200 or 503", i, a.status)
			}
		}
		written, shed := env.Server.Engine().Stats()
		if int(written) != counts[200] || int(shed) != counts[503] {
			t.Errorf("engine wrote %d and shed %d; answers: 200 %d, 503 %d", written, shed, counts[200], counts[503])
		}
		if counts[200] == 0 {
			t.Error("no request got through")
		}
		t.Logf("200 %d, 503 %d (queue of 1)", counts[200], counts[503])
	})
}
