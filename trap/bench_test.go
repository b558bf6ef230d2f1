package trap_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// load sends GETs to url from parallel clients, each with its own user agent, and
// reports requests per second and latency percentiles. Both benchmarks below use it,
// so the trap listener and a bare handler meet the same load generator.
func load(b *testing.B, url string) {
	transport := &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	var mu sync.Mutex
	var lat []time.Duration
	var worker atomic.Int64
	b.SetParallelism(64) // 64 × GOMAXPROCS clients
	b.ReportAllocs()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ua := fmt.Sprintf("Mozilla/5.0 (bench %d) Chrome/131.0 Safari/537.36", worker.Add(1))
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
	elapsed := time.Since(start)
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkListenerPage serves a page decoy through the trap listener, each hit
// durably recorded (with its session, signals and judgement) before the answer.
func BenchmarkListenerPage(b *testing.B) {
	for _, be := range ft.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			env := ft.Start(b, be)
			a := env.Tenant("acme")
			env.MustGraphQL(a.ReadWrite, `mutation { createTrap(input:{name:"Docs", type: page, path:"/internal/docs"}) { id } }`, nil)
			load(b, env.Trap.URL+"/internal/docs")
			written, shed := env.Server.Engine().Stats()
			b.ReportMetric(float64(shed), "shed")
			_ = written
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
	load(b, bare.URL+"/internal/docs")
}
