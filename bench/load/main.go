// Command flytrap-load opens many live subscribers against one Flytrap API — GraphQL
// subscriptions over WebSocket (graphql-transport-ws, one connection each) and SSE event
// streams (GET /api/v1/events/stream, one connection each) — and times how long an event
// takes to reach every one of them. It is a test tool: point it only at a server of your
// own (on this machine, a loopback address). Every loop in it is bounded in count and time.
//
// Standalone (the default): it opens the subscribers, makes sure each is live with warm-up
// traps, then creates -events traps through the createTrap mutation one at a time, waiting
// for each to reach every subscriber, and prints p50/p99/max of request→receipt (the time
// from sending the mutation, so the figure includes the request and the commit). With -pid
// (Linux) it also prints the server process's resident-memory growth per open connection.
//
//	flytrap-load -url http://127.0.0.1:8080 -key ftk_… -ws 1000 -sse 1000 -events 20 -pid 1234
//
// Driven (-driven): another program commits the events; this one only receives. It prints
// "ready N" once the N subscribers are open, then for every event whose data carries
// "bench_iter":K, once all subscribers have it, a line "round K T1 … TN" with each
// subscriber's receipt time in Unix nanoseconds. It closes every connection and exits when
// its standard input ends. server/livebench_test.go runs it this way to measure the
// server's memory per connection without the clients' in the same process.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "flytrap-load:", err)
		os.Exit(1)
	}
}

type options struct {
	url, key        string
	ws, sse, events int
	parallel        int
	pid             int
	driven          bool
	timeout, settle time.Duration
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	var o options
	fs := flag.NewFlagSet("flytrap-load", flag.ContinueOnError)
	fs.StringVar(&o.url, "url", "http://127.0.0.1:8080", "the API's base URL")
	fs.StringVar(&o.key, "key", os.Getenv("FLYTRAP_KEY"), "API key of the organization to subscribe to (default $FLYTRAP_KEY); standalone mode needs read-write")
	fs.IntVar(&o.ws, "ws", 1000, "GraphQL WebSocket subscriptions to open")
	fs.IntVar(&o.sse, "sse", 1000, "SSE event streams to open")
	fs.IntVar(&o.events, "events", 20, "events to create and time (standalone mode), 1–10000")
	fs.IntVar(&o.parallel, "parallel", 32, "connections opened at once")
	fs.IntVar(&o.pid, "pid", 0, "the server's process id: report its resident-memory growth per connection (Linux)")
	fs.BoolVar(&o.driven, "driven", false, "only receive: print receipts of bench_iter events until stdin ends")
	fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "longest wait for one event to reach every subscriber")
	fs.DurationVar(&o.settle, "settle", 2*time.Second, "quiet time before the memory reading (standalone with -pid)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case o.key == "":
		return errors.New("-key (or FLYTRAP_KEY) is required")
	case o.ws < 0 || o.sse < 0 || o.ws+o.sse == 0 || o.ws+o.sse > 20000:
		return errors.New("-ws and -sse: between 1 and 20000 subscribers in all")
	case !o.driven && (o.events < 1 || o.events > 10000):
		return errors.New("-events: between 1 and 10000")
	case o.parallel < 1:
		return errors.New("-parallel: must be positive")
	}
	o.url = strings.TrimRight(o.url, "/")
	if err := raiseFDLimit(uint64(o.ws+o.sse) + 256); err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rssBefore := rss(o.pid)
	l := newLoad(o)
	opened := time.Now()
	if err := l.open(ctx); err != nil {
		l.close()
		return err
	}
	defer l.close()
	n := o.ws + o.sse

	if o.driven {
		fmt.Fprintf(stdout, "ready %d\n", n)
		l.report = func(iter int64, recv []int64) {
			var sb strings.Builder
			fmt.Fprintf(&sb, "round %d", iter)
			for _, t := range recv {
				sb.WriteByte(' ')
				sb.WriteString(strconv.FormatInt(t, 10))
			}
			sb.WriteByte('\n')
			l.outMu.Lock()
			io.WriteString(stdout, sb.String())
			l.outMu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stdin) // until the driver is done
		return nil
	}

	// Standalone: warm up until one event reaches every subscriber, so all are live.
	if err := l.warmUp(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "opened %d WebSocket subscriptions and %d SSE streams in %v\n", o.ws, o.sse, time.Since(opened).Round(time.Millisecond))
	if o.pid > 0 {
		time.Sleep(o.settle)
		after := rss(o.pid)
		fmt.Fprintf(stdout, "server pid %d resident memory: %d KiB before, %d KiB with %d idle connections: %.1f KiB per connection "+
			"(includes GC headroom; meaningful only on a freshly started server, as the Go runtime keeps memory it has used)\n",
			o.pid, rssBefore, after, n, float64(after-rssBefore)/float64(n))
	}
	var lat []time.Duration
	for i := range o.events {
		d, err := l.timeOne(ctx, fmt.Sprintf("event %d", i+1))
		if err != nil {
			return err
		}
		lat = append(lat, d...)
	}
	slices.Sort(lat)
	fmt.Fprintf(stdout, "request→receipt over %d receipts (%d events × %d subscribers): p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
		len(lat), o.events, n, ms(percentile(lat, 50)), ms(percentile(lat, 99)), ms(lat[len(lat)-1]))
	if s := l.stray(); s > 0 {
		return fmt.Errorf("%d receipts were repeats or of no current event", s)
	}
	return nil
}

// load is the set of open subscribers and their receipts.
type load struct {
	o         options
	http      *http.Client
	transport *http.Transport

	mu      sync.Mutex
	rounds  map[int64]*round
	strays  int
	report  func(iter int64, recv []int64) // driven mode
	outMu   sync.Mutex
	conns   []*websocket.Conn
	streams []func()
	readers sync.WaitGroup
	iter    int64 // standalone: the last event created
}

type round struct {
	recv []int64
	got  int
	done chan struct{}
}

func newLoad(o options) *load {
	n := o.ws + o.sse
	t := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
		MaxConnsPerHost:     n + 16, // each stream its own connection
		MaxIdleConns:        n + 16,
		MaxIdleConnsPerHost: n + 16,
		DisableCompression:  true,
	}
	return &load{
		o: o, transport: t, http: &http.Client{Transport: t},
		rounds: map[int64]*round{}, conns: make([]*websocket.Conn, o.ws), streams: make([]func(), o.sse),
	}
}

// received records subscriber sub's receipt of the event of iteration iter.
func (l *load) received(sub int, iter int64, now int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.rounds[iter]
	if r == nil {
		if l.report == nil { // standalone: rounds are made before their event
			l.strays++
			return
		}
		r = &round{recv: make([]int64, l.o.ws+l.o.sse), done: make(chan struct{})}
		l.rounds[iter] = r
	}
	if r.recv[sub] != 0 {
		l.strays++
		return
	}
	r.recv[sub] = now
	if r.got++; r.got == len(r.recv) {
		close(r.done)
		if l.report != nil {
			delete(l.rounds, iter)
			l.report(iter, r.recv)
		}
	}
}

func (l *load) stray() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.strays
}

// iterOf reads the iteration out of an event: "bench_iter":K in its data (driven mode), or
// a trap named "flytrap-load K" (standalone mode).
func iterOf(msg []byte) (int64, bool) {
	for _, marker := range []string{`"bench_iter":`, `"name":"flytrap-load `} {
		i := bytes.Index(msg, []byte(marker))
		if i < 0 {
			continue
		}
		rest := msg[i+len(marker):]
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		n, err := strconv.ParseInt(string(rest[:j]), 10, 64)
		return n, err == nil
	}
	return 0, false
}

func (l *load) open(ctx context.Context) error {
	jobs := make(chan int)
	var (
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	for range l.o.parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				var err error
				if i < l.o.ws {
					err = l.openWS(ctx, i)
				} else {
					err = l.openSSE(ctx, i)
				}
				if err != nil {
					errOnce.Do(func() { first = err })
				}
			}
		}()
	}
	n := l.o.ws + l.o.sse
	for i, w, s := 0, 0, 0; i < n; i++ { // interleaved: WebSocket, stream, WebSocket, …
		if (i%2 == 0 && w < l.o.ws) || s >= l.o.sse {
			jobs <- w
			w++
		} else {
			jobs <- l.o.ws + s
			s++
		}
	}
	close(jobs)
	wg.Wait()
	return first
}

type wsMsg struct {
	ID      string         `json:"id,omitempty"`
	Type    string         `json:"type"`
	Payload map[string]any `json:"payload,omitempty"`
}

const eventsQuery = `subscription { events { id type cursor data } }`

func (l *load) openWS(ctx context.Context, i int) error {
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}, HandshakeTimeout: 30 * time.Second, ReadBufferSize: 1024, WriteBufferSize: 1024}
	u := "ws" + strings.TrimPrefix(l.o.url, "http") + "/graphql"
	c, _, err := d.DialContext(ctx, u, nil)
	if err != nil {
		return fmt.Errorf("websocket %d: %w", i, err)
	}
	fail := func(err error) error { c.Close(); return fmt.Errorf("websocket %d: %w", i, err) }
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if err := c.WriteJSON(wsMsg{Type: "connection_init", Payload: map[string]any{"Authorization": "Bearer " + l.o.key}}); err != nil {
		return fail(err)
	}
	for {
		var m wsMsg
		if err := c.ReadJSON(&m); err != nil {
			return fail(fmt.Errorf("waiting for connection_ack: %w", err))
		}
		if m.Type == "connection_ack" {
			break
		}
		if m.Type != "ping" && m.Type != "pong" {
			return fail(fmt.Errorf("waiting for connection_ack, got %+v", m))
		}
	}
	if err := c.WriteJSON(wsMsg{ID: "1", Type: "subscribe", Payload: map[string]any{"query": eventsQuery}}); err != nil {
		return fail(err)
	}
	_ = c.SetReadDeadline(time.Time{})
	l.mu.Lock()
	l.conns[i] = c
	l.mu.Unlock()
	l.readers.Add(1)
	go func() {
		defer l.readers.Done()
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			now := time.Now().UnixNano()
			if iter, ok := iterOf(msg); ok {
				l.received(i, iter, now)
				continue
			}
			// gqlgen closes a graphql-transport-ws connection that does not answer its pings.
			if bytes.Contains(msg, []byte(`"type":"ping"`)) {
				_ = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"pong"}`))
			}
		}
	}()
	return nil
}

func (l *load) openSSE(ctx context.Context, i int) error {
	ctx, cancel := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, l.o.url+"/api/v1/events/stream", nil)
	req.Header.Set("Authorization", "Bearer "+l.o.key)
	res, err := l.http.Do(req)
	if err != nil {
		cancel()
		return fmt.Errorf("stream %d: %w", i-l.o.ws, err)
	}
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		res.Body.Close()
		cancel()
		return fmt.Errorf("stream %d: status %d: %s", i-l.o.ws, res.StatusCode, b)
	}
	l.mu.Lock()
	l.streams[i-l.o.ws] = func() { cancel(); res.Body.Close() }
	l.mu.Unlock()
	l.readers.Add(1)
	go func() {
		defer l.readers.Done()
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 0, 1024), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if !bytes.HasPrefix(line, []byte("data: ")) {
				continue
			}
			now := time.Now().UnixNano()
			if iter, ok := iterOf(line); ok {
				l.received(i, iter, now)
			}
		}
	}()
	return nil
}

func (l *load) close() {
	l.mu.Lock()
	conns, streams := l.conns, l.streams
	l.mu.Unlock()
	for _, c := range conns {
		if c != nil {
			_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
			c.Close()
		}
	}
	for _, stop := range streams {
		if stop != nil {
			stop()
		}
	}
	l.readers.Wait()
	l.transport.CloseIdleConnections()
}

// createTrap creates the trap "flytrap-load K" for the next K and returns K.
func (l *load) createTrap(ctx context.Context) (int64, *round, time.Time, error) {
	l.mu.Lock()
	l.iter++
	iter := l.iter
	r := &round{recv: make([]int64, l.o.ws+l.o.sse), done: make(chan struct{})}
	l.rounds[iter] = r
	l.mu.Unlock()
	body, _ := json.Marshal(map[string]any{
		"query":     `mutation($in: CreateTrapInput!) { createTrap(input: $in) { id } }`,
		"variables": map[string]any{"in": map[string]any{"name": fmt.Sprintf("flytrap-load %d", iter), "type": "api"}},
	})
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, l.o.url+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+l.o.key)
	start := time.Now()
	res, err := l.http.Do(req)
	if err != nil {
		return 0, nil, start, err
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if res.StatusCode != http.StatusOK || bytes.Contains(out, []byte(`"errors"`)) {
		return 0, nil, start, fmt.Errorf("createTrap: %d %s", res.StatusCode, out)
	}
	return iter, r, start, nil
}

// warmUp creates traps until one reaches every subscriber: then all are live.
func (l *load) warmUp(ctx context.Context) error {
	for range 60 {
		_, r, _, err := l.createTrap(ctx)
		if err != nil {
			return err
		}
		select {
		case <-r.done:
			return nil
		case <-time.After(2 * time.Second):
		}
	}
	return errors.New("after 60 warm-up events, still not every subscriber receives events")
}

// timeOne creates one trap and returns each subscriber's request→receipt time.
func (l *load) timeOne(ctx context.Context, what string) ([]time.Duration, error) {
	iter, r, start, err := l.createTrap(ctx)
	if err != nil {
		return nil, err
	}
	select {
	case <-r.done:
	case <-time.After(l.o.timeout):
		l.mu.Lock()
		got := r.got
		l.mu.Unlock()
		return nil, fmt.Errorf("%s (iteration %d): %d of %d subscribers had it after %v", what, iter, got, len(r.recv), l.o.timeout)
	}
	out := make([]time.Duration, len(r.recv))
	for i, t := range r.recv {
		out[i] = time.Duration(t - start.UnixNano())
	}
	return out, nil
}

// rss is pid's resident set in KiB (0 without a pid or on error).
func rss(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// raiseFDLimit lifts the soft RLIMIT_NOFILE towards need, up to the hard limit.
func raiseFDLimit(need uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("getrlimit: %w", err)
	}
	if lim.Cur >= need {
		return nil
	}
	if lim.Max < need {
		return fmt.Errorf("RLIMIT_NOFILE hard limit %d is below the %d descriptors needed", lim.Max, need)
	}
	lim.Cur = lim.Max
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
