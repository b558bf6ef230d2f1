package retention_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flytrap/flytrap/ent"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/retention"
	"github.com/flytrap/flytrap/server"
	"github.com/flytrap/flytrap/store"
)

// BenchmarkWriterDuringPurge measures the trap listener's durable hits per second with
// no purge running, while a purge deletes a large backlog of expired hits (production
// batch size and pause), and with no purge again, in one run on one database; and the
// purge's own rate. Run it alone, once:
//
//	FLYTRAP_BENCH_BACKLOG=200000 go test -run '^$' -bench WriterDuringPurge -benchtime 1x ./retention/
func BenchmarkWriterDuringPurge(b *testing.B) {
	backlog := 100000
	if v, err := strconv.Atoi(os.Getenv("FLYTRAP_BENCH_BACKLOG")); err == nil && v > 0 {
		backlog = v
	}
	for _, be := range ft.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			// The server's own purge stays off: the benchmark runs one, measured.
			env := ft.Start(b, be, func(c *server.Config) { c.Retention = retention.Config{Interval: time.Hour, BatchSize: 1} })
			a := env.Tenant("acme")
			env.MustGraphQL(a.ReadWrite, `mutation { createTrap(input:{name:"Docs", type: page, path:"/internal/docs"}) { id } }`, nil)
			seedBacklog(b, env, a.Org.ID, backlog)
			url := env.Trap.URL + "/internal/docs"
			const window = 5 * time.Second

			before := hammer(b, url, func(ctx context.Context) { sleepCtx(ctx, window) })
			var res retention.Result
			var took time.Duration
			during := hammer(b, url, func(ctx context.Context) {
				p := retention.New(env.DB.SQL, env.DB.Dialect, retention.DefaultConfig(), slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)
				start := time.Now()
				var err error
				res, err = p.Purge(ctx)
				took = time.Since(start)
				if err != nil {
					b.Error(err)
				}
			})
			after := hammer(b, url, func(ctx context.Context) { sleepCtx(ctx, window) })
			if res.Hits != int64(backlog) {
				var left int
				var oldest string
				env.DB.SQL.QueryRow("SELECT COUNT(*), MIN(CAST(received_at AS TEXT)) FROM hits WHERE id < 'hit_01m'").Scan(&left, &oldest)
				b.Fatalf("purged %d hits, want %d (%+v; %d old left, oldest %s)", res.Hits, backlog, res, left, oldest)
			}
			b.ReportMetric(before.rate, "before-hits/s")
			b.ReportMetric(during.rate, "purging-hits/s")
			b.ReportMetric(after.rate, "after-hits/s")
			b.ReportMetric(during.p99, "purging-p99-ms")
			b.ReportMetric(max(before.p99, after.p99), "idle-p99-ms")
			b.ReportMetric(float64(res.Hits)/took.Seconds(), "purged-rows/s")
			b.ReportMetric(took.Seconds()*1e6/float64(res.Hits), "s/Mrows")
		})
	}
}

// seedBacklog stores n hits received 40 days ago (ids of that time, 600-byte bodies) in one session.
func seedBacklog(b *testing.B, env *ft.Env, org string, n int) {
	b.Helper()
	ctx := ft.System()
	at := time.Now().Add(-40 * retention.Day)
	s, err := env.DB.Client.Session.Create().SetID(idAt(ids.Session, at)).SetOrgID(org).SetSourceIP("198.51.100.7").
		SetFirstSeen(at).SetLastSeen(time.Now()).SetHitCount(n).Save(ctx)
	if err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("b", 600)
	headers := map[string][]string{"User-Agent": {"Mozilla/5.0 (bench)"}, "Accept": {"text/html"}}
	for done := 0; done < n; {
		tx, err := env.DB.Client.Tx(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for k := 0; k < 40 && done < n; k++ {
			m := min(500, n-done)
			bulk := make([]*ent.HitCreate, m)
			for i := range bulk {
				t := at.Add(time.Duration(done+i) * time.Millisecond)
				bulk[i] = tx.Hit.Create().SetID(idAt(ids.Hit, t)).SetOrgID(org).SetSessionID(s.ID).SetMethod("GET").
					SetPath("/internal/docs").SetHeaders(headers).SetSourceIP("198.51.100.7").SetReceivedAt(t).SetBody(body)
			}
			if err := tx.Hit.CreateBulk(bulk...).Exec(ctx); err != nil {
				b.Fatal(err)
			}
			done += m
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

type loadResult struct{ rate, p99 float64 }

// hammer sends GETs to url from 32 clients (each its own visitor) while during runs, and
// returns the durable hits per second and the p99 latency in milliseconds.
func hammer(b *testing.B, url string, during func(ctx context.Context)) loadResult {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	transport := &http.Transport{MaxIdleConnsPerHost: 64}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var lat []time.Duration
	var failed atomic.Int64
	for w := range 32 {
		wg.Go(func() {
			ua := fmt.Sprintf("Mozilla/5.0 (purge bench %d)", w)
			var mine []time.Duration
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				req.Header.Set("User-Agent", ua)
				t0 := time.Now()
				res, err := client.Do(req)
				if err != nil {
					continue // the window closed
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK && ctx.Err() == nil {
					failed.Add(1)
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	start := time.Now()
	during(ctx)
	elapsed := time.Since(start)
	cancel()
	wg.Wait()
	if n := failed.Load(); n > 0 {
		b.Errorf("%d hits were not answered 200 (shed or failed)", n)
	}
	if len(lat) == 0 {
		return loadResult{}
	}
	slices.Sort(lat)
	return loadResult{rate: float64(len(lat)) / elapsed.Seconds(), p99: float64(lat[len(lat)*99/100].Microseconds()) / 1000}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// BenchmarkStoragePerHit sends hits through the trap listener with a browser's headers (3
// hits per visitor, every fourth a POST with a 1 kB form body) and reports the stored bytes
// per hit and per session, indexes included (SQLite: dbstat; PostgreSQL: pg_total_relation_size
// after VACUUM ANALYZE). Run it once:
//
//	go test -run '^$' -bench StoragePerHit -benchtime 1x ./retention/
func BenchmarkStoragePerHit(b *testing.B) {
	const visitors, perVisitor = 1000, 3
	for _, be := range ft.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			env := ft.Start(b, be)
			a := env.Tenant("acme")
			env.MustGraphQL(a.ReadWrite, `mutation { createTrap(input:{name:"Docs", type: page, path:"/internal/docs"}) { id } }`, nil)
			base, err := env.DB.Stats(context.Background(), true)
			if err != nil {
				b.Fatal(err)
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
			var wg sync.WaitGroup
			sem := make(chan struct{}, 16)
			form := "q=" + strings.Repeat("x", 1000)
			for v := range visitors {
				wg.Go(func() {
					sem <- struct{}{}
					defer func() { <-sem }()
					for i := range perVisitor {
						method, body := http.MethodGet, ""
						if (v*perVisitor+i)%4 == 3 {
							method, body = http.MethodPost, form
						}
						req, _ := http.NewRequest(method, env.Trap.URL+"/internal/docs?ref=bench&page="+strconv.Itoa(i), strings.NewReader(body))
						for k, val := range browserHeaders {
							req.Header.Set(k, val)
						}
						req.Header.Set("User-Agent", fmt.Sprintf("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.%d.0 Safari/537.36", v))
						if body != "" {
							req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
						}
						res, err := client.Do(req)
						if err != nil {
							b.Error(err)
							return
						}
						io.Copy(io.Discard, res.Body)
						res.Body.Close()
					}
				})
			}
			wg.Wait()
			if env.DB.Dialect == "postgres" {
				if _, err := env.DB.SQL.Exec("VACUUM ANALYZE"); err != nil {
					b.Fatal(err)
				}
			} else if _, err := env.DB.SQL.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
				b.Fatal(err)
			}
			st, err := env.DB.Stats(context.Background(), true)
			if err != nil {
				b.Fatal(err)
			}
			get := func(s []store.TableStats, name string) (rows, size int64) {
				for _, t := range s {
					if t.Name == name {
						return t.Rows, t.SizeBytes
					}
				}
				return 0, 0
			}
			hr, hs := get(st.Tables, "hits")
			_, hs0 := get(base.Tables, "hits")
			sr, ss := get(st.Tables, "sessions")
			_, ss0 := get(base.Tables, "sessions")
			gr, gs := get(st.Tables, "signals")
			_, gs0 := get(base.Tables, "signals")
			if hr != visitors*perVisitor {
				b.Fatalf("%d hits stored, want %d", hr, visitors*perVisitor)
			}
			b.ReportMetric(float64(hs-hs0)/float64(hr), "B/hit")
			b.ReportMetric(float64(ss-ss0)/float64(sr), "B/session")
			if gr > 0 {
				b.ReportMetric(float64(gs-gs0)/float64(hr), "signal-B/hit")
			}
			b.ReportMetric(float64(st.SizeBytes-base.SizeBytes)/float64(hr), "db-B/hit")
		})
	}
}

// browserHeaders are what Chrome sends for a page (besides User-Agent).
var browserHeaders = map[string]string{
	"Accept":                    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8",
	"Accept-Encoding":           "gzip, deflate, br, zstd",
	"Accept-Language":           "en-US,en;q=0.9",
	"Cache-Control":             "max-age=0",
	"Sec-Ch-Ua":                 `"Chromium";v="131", "Not_A Brand";v="24"`,
	"Sec-Ch-Ua-Mobile":          "?0",
	"Sec-Ch-Ua-Platform":        `"Linux"`,
	"Sec-Fetch-Dest":            "document",
	"Sec-Fetch-Mode":            "navigate",
	"Sec-Fetch-Site":            "none",
	"Sec-Fetch-User":            "?1",
	"Upgrade-Insecure-Requests": "1",
}
