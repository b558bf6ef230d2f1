package rest_test

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/event"
	ft "github.com/flytrap/flytrap/flytraptest"
)

// benchEvents is the size of the log the pagination benchmark reads (FLYTRAP_BENCH_EVENTS overrides).
func benchEvents() int {
	if n, err := strconv.Atoi(os.Getenv("FLYTRAP_BENCH_EVENTS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// seedEvents writes n events for org in bulk, positions 1..n, straight into the table.
func seedEvents(b *testing.B, c *ent.Client, org string, n int) {
	ctx := ft.System()
	const batch = 2000
	created := time.Now().UTC().Truncate(time.Second)
	for start := 0; start < n; start += batch {
		end := min(n, start+batch)
		bulk := make([]*ent.EventCreate, 0, end-start)
		for i := start; i < end; i++ {
			bulk = append(bulk, c.Event.Create().SetOrgID(org).SetPosition(int64(i+1)).
				SetType(event.TrapCreated).SetAPIVersion(event.APIVersion).SetCreatedAt(created).
				SetData(map[string]any{"id": "trp_x", "name": "seed"}))
		}
		if err := c.Event.CreateBulk(bulk...).Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEventsPage reads a page of 100 from the start of a large log and from deep inside it:
// keyset pagination costs the same wherever the page is.
func BenchmarkEventsPage(b *testing.B) {
	for _, be := range ft.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			env := ft.Start(b, be)
			a := env.Tenant("acme")
			n := benchEvents()
			seedEvents(b, env.DB.Client, a.Org.ID, n)
			for _, at := range []struct {
				name string
				pos  int64
			}{{"first", 0}, {"deep", int64(n - 200)}} {
				b.Run(at.name, func(b *testing.B) {
					path := "/api/v1/events?" + url.Values{"limit": {"100"}, "cursor": {app.EventCursor(at.pos)}}.Encode()
					for b.Loop() {
						res, body := env.Get(a.ReadOnly, path)
						if res.StatusCode != http.StatusOK || len(body) < 1000 {
							b.Fatalf("%d %s", res.StatusCode, body)
						}
					}
				})
			}
		})
	}
}

// BenchmarkStreamLatency measures from an event's commit to its arrival on an open SSE stream.
func BenchmarkStreamLatency(b *testing.B) {
	for _, be := range ft.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			env := ft.Start(b, be)
			a := env.Tenant("acme")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			_, c := openStreamB(b, ctx, env, a.ReadOnly)
			var lat []time.Duration
			for b.Loop() {
				tx, err := env.DB.Client.Tx(ft.System())
				if err != nil {
					b.Fatal(err)
				}
				if _, err := event.Append(ft.System(), tx, a.Org.ID, event.TrapCreated, map[string]any{"n": 1}); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				committed := time.Now()
				select {
				case <-c:
					lat = append(lat, max(0, time.Since(committed)))
				case <-time.After(10 * time.Second):
					b.Fatal("event not delivered within 10s")
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// openStreamB opens the event stream for a benchmark and returns a channel of event arrivals.
func openStreamB(b *testing.B, ctx context.Context, env *ft.Env, token string) (*http.Response, <-chan struct{}) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env.HTTP.URL+"/api/v1/events/stream", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := env.HTTP.Client().Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		b.Fatalf("open stream: %v %v", res, err)
	}
	out := make(chan struct{}, 1024)
	go func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				out <- struct{}{}
			}
		}
	}()
	return res, out
}
