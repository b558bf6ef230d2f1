package trap_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/flytraptest/testdb"
)

// load sends GETs to url from parallel clients, each with its own user agent (its own
// visitor, so its own session) or, with oneVisitor, all with one (one session, as wrk and
// scripts/listener-wrk.sh send them), and reports requests per second, latency percentiles
// and CPU per request. The benchmarks below use it, so the trap listener and a bare handler
// meet the same load generator.
// settle, if given, runs before the clock and the CPU are read: what the server still does
// for the requests after their answers (recording journaled hits) counts.
func load(b *testing.B, url string, oneVisitor bool, settle ...func()) {
	transport := &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	var mu sync.Mutex
	var lat []time.Duration
	var worker atomic.Int64
	b.SetParallelism(64) // 64 × GOMAXPROCS clients
	b.ReportAllocs()
	start, cpu := time.Now(), testdb.ProcessCPU()
	b.RunParallel(func(pb *testing.PB) {
		ua := fmt.Sprintf("Mozilla/5.0 (bench %d) Chrome/131.0 Safari/537.36", worker.Add(1))
		if oneVisitor {
			ua = "wrk/4.1 (bench)"
		}
		var mine []time.Duration
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			req.Header.Set("User-Agent", ua)
			t0 := time.Now()
			res, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				b.Errorf("status %d", res.StatusCode)
				return
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	for _, f := range settle {
		f()
	}
	elapsed, cpu := time.Since(start), testdb.ProcessCPU()-cpu
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	// The process's CPU per request (server, writer and clients; not PostgreSQL's): on a
	// machine others load, the ratio of two handlers' CPU per request says more about their
	// throughput on a machine of their own than req/s does.
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(lat)), "cpu-µs/req")
}

// BenchmarkListenerPage serves a page decoy through the trap listener, each hit journaled
// before the answer and recorded (with its session, signals and judgement) after it; the
// benchmark ends once every hit is recorded.
func BenchmarkListenerPage(b *testing.B) { listenerBench(b, false) }

// BenchmarkListenerOneVisitor is BenchmarkListenerPage with every request from one visitor
// (one session): what wrk measures (scripts/listener-wrk.sh).
func BenchmarkListenerOneVisitor(b *testing.B) { listenerBench(b, true) }

func listenerBench(b *testing.B, oneVisitor bool) {
	for _, be := range ft.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			env := ft.Start(b, be, ft.JournalAck) // as served: each answer once its hit is journaled
			a := env.Tenant("acme")
			env.MustGraphQL(a.ReadWrite, `mutation { createTrap(input:{name:"Docs", type: page, path:"/internal/docs"}) { id } }`, nil)
			e := env.Server.Engine()
			load(b, env.Trap.URL+"/internal/docs", oneVisitor, func() {
				for received, stored, shed := e.Counts(); stored < received-shed; received, stored, shed = e.Counts() {
					time.Sleep(100 * time.Microsecond) // the CPU of recording them is the requests' too
				}
			})
			_, shed := env.Server.Engine().Stats()
			b.ReportMetric(float64(shed), "shed")
		})
	}
}

// BenchmarkBareHandler is the yardstick: a bare net/http handler writing a decoy's bytes.
func BenchmarkBareHandler(b *testing.B) {
	env := ft.Start(b, ft.Backends()[0])
	a := env.Tenant("acme")
	env.MustGraphQL(a.ReadWrite, `mutation { createTrap(input:{name:"Docs", type: page, path:"/internal/docs"}) { id } }`, nil)
	res, err := http.Get(env.Trap.URL + "/internal/docs")
	if err != nil {
		b.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	}))
	defer bare.Close()
	load(b, bare.URL+"/internal/docs", false)
}

// browserHeaders are the request headers a desktop Chrome sends for a page: what a
// stored hit keeps of a typical visitor (the benchmarks above send two headers).
var browserHeaders = map[string]string{
	"Accept":                    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7",
	"Accept-Encoding":           "gzip, deflate, br, zstd",
	"Accept-Language":           "en-US,en;q=0.9,de;q=0.8",
	"Cache-Control":             "max-age=0",
	"Sec-Ch-Ua":                 `"Google Chrome";v="131", "Chromium";v="131", "Not_A Brand";v="24"`,
	"Sec-Ch-Ua-Mobile":          "?0",
	"Sec-Ch-Ua-Platform":        `"Windows"`,
	"Sec-Fetch-Dest":            "document",
	"Sec-Fetch-Mode":            "navigate",
	"Sec-Fetch-Site":            "none",
	"Sec-Fetch-User":            "?1",
	"Upgrade-Insecure-Requests": "1",
}

// BenchmarkHitStorage records b.N hits of browser-like requests (a visitor per 20
// hits) through the listener and reports what the hits table and its indexes take
// per hit on disk ("hit-B"), and the whole database per hit ("db-B").
func BenchmarkHitStorage(b *testing.B) {
	for _, be := range ft.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			env := ft.Start(b, be)
			a := env.Tenant("acme")
			env.MustGraphQL(a.ReadWrite, `mutation { createTrap(input:{name:"Docs", type: page, path:"/internal/docs"}) { id } }`, nil)
			transport := &http.Transport{MaxIdleConnsPerHost: 64}
			defer transport.CloseIdleConnections()
			client := &http.Client{Transport: transport}
			var n atomic.Int64
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					req, _ := http.NewRequest(http.MethodGet, env.Trap.URL+"/internal/docs?page="+fmt.Sprint(i%7), nil)
					for k, v := range browserHeaders {
						req.Header.Set(k, v)
					}
					req.Header.Set("User-Agent", fmt.Sprintf("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.%d.0 Safari/537.36", i/20))
					res, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
			})
			b.StopTimer()
			hits, table, db := storage(b, env)
			if hits > 0 {
				b.ReportMetric(float64(table)/float64(hits), "hit-B")
				b.ReportMetric(float64(db)/float64(hits), "db-B")
			}
		})
	}
}

// storage reports the stored hits, the bytes the hits table and its indexes take and
// the bytes of the whole database.
func storage(b *testing.B, env *ft.Env) (hits, table, db int64) {
	ctx := context.Background()
	q := env.DB.SQL.QueryRowContext
	if err := q(ctx, `SELECT COUNT(*) FROM hits`).Scan(&hits); err != nil {
		b.Fatal(err)
	}
	if env.DB.Dialect == dialect.Postgres {
		if _, err := env.DB.SQL.ExecContext(ctx, `VACUUM ANALYZE hits`); err != nil {
			b.Fatal(err)
		}
		err := q(ctx, `SELECT pg_total_relation_size('hits'), pg_database_size(current_database())`).Scan(&table, &db)
		if err != nil {
			b.Fatal(err)
		}
		return hits, table, db
	}
	if _, err := env.DB.SQL.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	err := q(ctx, `SELECT SUM(pgsize) FROM dbstat WHERE name = 'hits' OR name IN (SELECT name FROM sqlite_master WHERE tbl_name = 'hits')`).Scan(&table)
	if err != nil {
		b.Fatal(err)
	}
	if err := q(ctx, `SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`).Scan(&db); err != nil {
		b.Fatal(err)
	}
	rows, err := env.DB.SQL.QueryContext(ctx, `SELECT name, SUM(pgsize) FROM dbstat WHERE name = 'hits' OR name IN (SELECT name FROM sqlite_master WHERE tbl_name = 'hits') GROUP BY name`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var size int64
		if err := rows.Scan(&name, &size); err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: %d B per hit", name, size/max(hits, 1))
	}
	var headers float64
	if err := q(ctx, `SELECT AVG(LENGTH(CAST(headers AS BLOB))) FROM hits`).Scan(&headers); err != nil {
		b.Fatal(err)
	}
	b.Logf("headers column: %.0f B per hit", headers)
	return hits, table, db
}
