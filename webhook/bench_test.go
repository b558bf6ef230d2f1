package webhook_test

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// BenchmarkDeliveries sends events to 100 endpoints on a local receiver and reports deliveries
// per second under a burst, and the delay from an event's commit to the first attempt of each
// of its deliveries (p50/p99), both under the burst and for events arriving one at a time.
//
//	go test ./webhook -run '^$' -bench Deliveries -benchtime 1x
func BenchmarkDeliveries(b *testing.B) {
	for _, be := range ft.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			for range b.N {
				benchDeliveries(b, be)
			}
		})
	}
}

func benchDeliveries(b *testing.B, be ft.Backend) {
	const endpoints = 100
	env := ft.Start(b, be, func(cfg *server.Config) {
		cfg.Webhook.AllowPrivate = true
		cfg.Webhook.Poll = 100 * time.Millisecond
	})
	a := env.Tenant("acme")
	var mu sync.Mutex
	arrived := map[string]time.Time{} // webhook-id + endpoint → first arrival
	rc := newReceiver(b, func(_ int, w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		k := r.Header.Get("webhook-id") + r.URL.Path
		mu.Lock()
		if _, seen := arrived[k]; !seen {
			arrived[k] = now
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	for i := range endpoints {
		createEndpoint(b, env, a.ReadWrite, map[string]any{"url": fmt.Sprintf("%s/%d", rc.URL, i)})
	}
	commits := map[string]time.Time{}
	emit := func(i int) {
		ev := appendEvent(b, env, a.Org.ID, "threat.detected", map[string]any{"session_id": fmt.Sprint("ses_", i)}).ID
		mu.Lock()
		commits[ev] = time.Now()
		mu.Unlock()
	}
	wait := func(n int) {
		deadline := time.Now().Add(5 * time.Minute)
		for {
			mu.Lock()
			got := len(arrived)
			mu.Unlock()
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d deliveries arrived", got, n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	delays := func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		var ds []time.Duration
		for k, at := range arrived {
			ds = append(ds, at.Sub(commits[k[:30]]))
		}
		slices.Sort(ds)
		return ds
	}
	pct := func(ds []time.Duration, p float64) time.Duration { return ds[int(float64(len(ds)-1)*p)] }

	// One at a time: an event every 50 ms, each fanning out to 100 endpoints.
	const trickle = 40
	for i := range trickle {
		emit(i)
		time.Sleep(50 * time.Millisecond)
	}
	wait(trickle * endpoints)
	quiet := delays()
	mu.Lock()
	clear(arrived)
	clear(commits)
	mu.Unlock()

	// A burst: 200 events committed as fast as one writer can, 20,000 deliveries.
	const burst = 200
	start := time.Now()
	for i := range burst {
		emit(trickle + i)
	}
	wait(burst * endpoints)
	elapsed := time.Since(start)
	loaded := delays()
	b.ReportMetric(float64(burst*endpoints)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(pct(quiet, 0.5).Microseconds())/1000, "quiet-p50-ms")
	b.ReportMetric(float64(pct(quiet, 0.99).Microseconds())/1000, "quiet-p99-ms")
	b.ReportMetric(float64(pct(loaded, 0.5).Microseconds())/1000, "burst-p50-ms")
	b.ReportMetric(float64(pct(loaded, 0.99).Microseconds())/1000, "burst-p99-ms")
}
