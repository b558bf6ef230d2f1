package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ingest drives hits into a trap listener at a fixed rate while the reads run: open-loop, so
// a request is scheduled at start + i/rate whatever became of the ones before it, and its
// latency is counted from that scheduled time (a listener that falls behind shows as
// latency, not as a lower rate the tool quietly adapts to). conns connections send them.
// One visitor sends share of the hits (its session grows by rate × share a second); the rest
// come from visitors many others in turn. A visitor is a User-Agent and an X-Forwarded-For
// address (believed only by a listener started with -trusted-proxies 127.0.0.1/32; the
// User-Agent alone already makes each one its own session).
type ingest struct {
	url, host string
	paths     []string
	rate      float64
	conns     int
	visitors  int
	share     float64

	scheduled atomic.Int64 // requests scheduled so far
	dropped   atomic.Int64 // scheduled while a minute of hits already queued: never sent
	cut       atomic.Int64 // still queued when the run ended: never sent, and not the listener's doing
	mu        sync.Mutex
	lat       []time.Duration // from the scheduled time to the answer's end
	svc       []time.Duration // from sending to the answer's end
	ok        int64           // answered 200
	errs      int64           // transport errors and other statuses
	firstErr  error
	start     time.Time
	end       time.Time
}

// oneVisitorUA is the User-Agent of the visitor whose session grows; flytrap-reads reads
// that session's detail (looked up by this User-Agent) while it grows.
const oneVisitorUA = "Mozilla/5.0 (compatible; flytrap-reads one visitor; +ingest)"

func visitorUA(i int) string {
	return fmt.Sprintf("Mozilla/5.0 (compatible; flytrap-reads visitor %d; +ingest)", i)
}

// visitorIP is the i-th visitor's address in 198.18.0.0/15 (benchmarking addresses: a header
// value only, no traffic goes there); the one visitor is 198.18.0.1.
func visitorIP(i int) string {
	i++
	return fmt.Sprintf("198.%d.%d.%d", 18+(i>>16)&1, (i>>8)&255, i&255)
}

// run sends hits until ctx ends, then waits for the requests under way.
func (g *ingest) run(ctx context.Context) {
	tr := &http.Transport{MaxConnsPerHost: g.conns, MaxIdleConnsPerHost: g.conns, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Timeout: 30 * time.Second, Transport: tr}
	type job struct {
		at time.Time
		i  int64
	}
	// A minute of hits may queue: beyond it the listener is hopelessly behind and the rest are dropped.
	queue := make(chan job, max(1, min(int(g.rate*60), 1<<20)))
	var wg sync.WaitGroup
	for range g.conns {
		wg.Go(func() {
			for j := range queue {
				g.send(ctx, client, j.at, j.i)
			}
		})
	}
	g.start = time.Now()
	interval := time.Duration(float64(time.Second) / g.rate)
	tick := time.NewTicker(min(interval, time.Millisecond))
	defer tick.Stop()
	var i int64
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case now := <-tick.C:
			// Schedule every request due by now, each at its own time.
			for due := int64(float64(now.Sub(g.start)) / float64(interval)); i <= due; i++ {
				g.scheduled.Add(1)
				select {
				case queue <- job{g.start.Add(time.Duration(i) * interval), i}:
				default:
					g.dropped.Add(1)
				}
			}
		}
	}
	close(queue)
	wg.Wait()
	g.end = time.Now()
}

func (g *ingest) send(ctx context.Context, client *http.Client, at time.Time, i int64) {
	if ctx.Err() != nil {
		g.cut.Add(1) // stopped before its turn
		return
	}
	ua, ip := oneVisitorUA, visitorIP(0)
	// Spread the one visitor's share evenly: request i is the one visitor's when ⌊(i+1)·share⌋ > ⌊i·share⌋.
	if int64(float64(i+1)*g.share) == int64(float64(i)*g.share) {
		v := 1 + int(i)%g.visitors
		ua, ip = visitorUA(v), visitorIP(v)
	}
	// A context of its own: the run's end must not cancel requests already sent (they would count as errors).
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodGet, g.url+g.paths[int(i)%len(g.paths)], nil)
	if err != nil {
		g.fail(err)
		return
	}
	if g.host != "" {
		req.Host = g.host
	}
	req.Header.Set("User-Agent", ua)
	req.Header.Set("X-Forwarded-For", ip)
	req.Header.Set("Accept", "*/*")
	t := time.Now()
	resp, err := client.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %d for %s", resp.StatusCode, req.URL.Path)
		}
	}
	done := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lat = append(g.lat, done.Sub(at))
	g.svc = append(g.svc, done.Sub(t))
	if err != nil {
		g.errs++
		if g.firstErr == nil {
			g.firstErr = err
		}
		return
	}
	g.ok++
}

func (g *ingest) fail(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.errs++
	if g.firstErr == nil {
		g.firstErr = err
	}
}

// report prints the ingest's own figures: rate reached, latency from the scheduled time
// (p50/p99/max) and from sending, errors, and requests never sent.
func (g *ingest) report(out io.Writer, recorded int64, haveRecorded bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	lat, svc := slices.Clone(g.lat), slices.Clone(g.svc)
	slices.Sort(lat)
	slices.Sort(svc)
	el := g.end.Sub(g.start)
	fmt.Fprintf(out, "ingest: %.0f hits/s asked for %v over %d connections (one visitor %.0f%%, %d others): %d scheduled, %d answered 200 (%.0f/s), %d errors, %d never sent (a minute behind), %d queued at the end\n",
		g.rate, el.Round(100*time.Millisecond), g.conns, g.share*100, g.visitors, g.scheduled.Load(), g.ok, float64(g.ok)/el.Seconds(), g.errs, g.dropped.Load(), g.cut.Load())
	if len(lat) > 0 {
		fmt.Fprintf(out, "ingest latency from schedule ms: p50 %.2f p99 %.2f max %.2f; from send: p50 %.2f p99 %.2f max %.2f\n",
			ms(pct(lat, 50)), ms(pct(lat, 99)), ms(lat[len(lat)-1]), ms(pct(svc, 50)), ms(pct(svc, 99)), ms(svc[len(svc)-1]))
	}
	if haveRecorded {
		fmt.Fprintf(out, "ingest: %d hits recorded (the organization's hourly counters, after the writer settled), %d answered 200 and not recorded\n",
			recorded, g.ok-recorded)
	}
	if g.firstErr != nil {
		fmt.Fprintf(out, "ingest: first error: %v\n", g.firstErr)
	}
}

// parsePaths is -trap-paths: comma-separated paths, each starting with /.
func parsePaths(v string) ([]string, error) {
	var out []string
	for p := range strings.SplitSeq(v, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("-trap-paths: %q does not start with /", p)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, errors.New("-trap-paths: no path")
	}
	return out, nil
}
