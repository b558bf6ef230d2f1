package server_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// openFDs counts the process's open file descriptors (server and test client alike).
func openFDs(t testing.TB) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(fds)
}

// peaks samples goroutines, open files and the heap until stop is called.
type peaks struct {
	goroutines, fds int
	heap            uint64
	stop            func()
}

func samplePeaks(t testing.TB) *peaks {
	p := &peaks{}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			p.goroutines = max(p.goroutines, runtime.NumGoroutine())
			p.fds = max(p.fds, openFDs(t))
			runtime.ReadMemStats(&ms)
			p.heap = max(p.heap, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	p.stop = sync.OnceFunc(func() { close(done); <-finished })
	t.Cleanup(p.stop)
	return p
}

func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// floodTally is what the server answered to a flood's operations.
type floodTally struct {
	mu      sync.Mutex
	data    int            // queries answered with the organization's data
	codes   map[string]int // operation errors by extensions.code
	closes  map[int]int    // sockets' close codes
	sockets int
	sent    int
}

func (f *floodTally) add(fn func()) { f.mu.Lock(); fn(); f.mu.Unlock() }

// flood sends subscribe messages as fast as one socket takes them (subscriptions and
// queries in turn), at least n and until stop closes, opening a new socket whenever the
// server closes one, and tallies every answer.
func flood(t *testing.T, env *ft.Env, key, orgID string, n int, stop <-chan struct{}) *floodTally {
	t.Helper()
	tally := &floodTally{codes: map[string]int{}, closes: map[int]int{}}
	var readers sync.WaitGroup
	sent := 0
	over := func() bool {
		select {
		case <-stop:
			return sent >= n
		default:
			return false
		}
	}
	for !over() {
		c, _, err := dialWS(t, env, "graphql-transport-ws", nil)
		if err != nil {
			t.Fatalf("dial after %d messages: %v", sent, err)
		}
		c.WriteJSON(wsMsg{Type: "connection_init", Payload: map[string]any{"Authorization": "Bearer " + key}})
		readUntil(t, c, "connection_ack")
		// A query first, answered before the flood: while the credential has tokens, an
		// admitted operation works as ever.
		c.WriteJSON(wsMsg{ID: "probe", Type: "subscribe", Payload: map[string]any{"query": `{ organization { id } }`}})
		for {
			var m struct {
				ID      string `json:"id"`
				Type    string `json:"type"`
				Payload any    `json:"payload"`
			}
			if err := c.ReadJSON(&m); err != nil {
				t.Fatalf("probe: %v", err)
			}
			if m.ID != "probe" {
				continue
			}
			switch {
			case m.Type == "next" && ft.Dig(m.Payload, "data", "organization", "id") == orgID:
				tally.add(func() { tally.data++ })
			case m.Type == "error":
				tally.add(func() { tally.codes[fmt.Sprint(ft.Dig(m.Payload, 0, "extensions", "code"))]++ })
			default:
				t.Fatalf("probe answered %+v", m)
			}
			break
		}
		_ = c.SetReadDeadline(time.Time{})
		tally.add(func() { tally.sockets++ })
		readers.Add(1)
		go func() {
			defer readers.Done()
			defer c.Close()
			for {
				var m struct {
					ID      string          `json:"id"`
					Type    string          `json:"type"`
					Payload json.RawMessage `json:"payload"`
				}
				_, data, err := c.ReadMessage()
				if err != nil {
					code := -1
					if ce := (*websocket.CloseError)(nil); errors.As(err, &ce) {
						code = ce.Code
					}
					tally.add(func() { tally.closes[code]++ })
					return
				}
				if json.Unmarshal(data, &m) != nil {
					continue
				}
				switch m.Type {
				case "next":
					var p struct {
						Data struct {
							Organization struct{ ID string } `json:"organization"`
						} `json:"data"`
						Errors []struct {
							Extensions struct{ Code string } `json:"extensions"`
						} `json:"errors"`
					}
					_ = json.Unmarshal(m.Payload, &p)
					tally.add(func() {
						if p.Data.Organization.ID == orgID {
							tally.data++
						}
						if len(p.Errors) > 0 {
							tally.codes[p.Errors[0].Extensions.Code]++
						}
					})
				case "error":
					var errs []struct {
						Extensions struct{ Code string } `json:"extensions"`
					}
					_ = json.Unmarshal(m.Payload, &errs)
					code := "error"
					if len(errs) > 0 {
						code = errs[0].Extensions.Code
					}
					tally.add(func() { tally.codes[code]++ })
				case "ping":
					_ = c.WriteJSON(wsMsg{Type: "pong"})
				}
			}
		}()
		for ; !over(); sent++ {
			q := `subscription { events { id } }`
			if sent%2 == 1 {
				q = `{ organization { id } }`
			}
			msg := fmt.Appendf(nil, `{"id":"f%d","type":"subscribe","payload":{"query":%q}}`, sent, q)
			if err := c.WriteMessage(websocket.TextMessage, msg); err != nil {
				break // closed by the server: the next socket carries on
			}
		}
		if over() {
			// The flood is over: what was sent is answered before the close is.
			_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		}
	}
	readers.Wait()
	tally.sent = sent
	return tally
}

// One socket flooding the server with operations holds at most the per-connection cap
// of them: refused operations cost no goroutine, database lookup or memory that grows
// with the flood, a socket that keeps sending after being refused is closed, and the
// trap listener keeps answering and recording throughout.
func TestWebsocketFloodIsBounded(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		def := server.DefaultConfig()
		env := ft.Start(t, b, func(c *server.Config) { c.RateLimit, c.RateBurst = def.RateLimit, def.RateBurst })
		a := env.Tenant("acme")
		env.CreateTrap(a.ReadWrite, "docs", "page")
		path := ft.Dig(env.MustGraphQL(a.ReadOnly, `{ traps(first: 1) { edges { node { path } } } }`, nil), "traps", "edges", 0, "node", "path").(string)
		sys := ft.System()
		hits0, err := env.DB.Client.Hit.Query().Count(sys)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		baseG, baseFD, baseHeap := runtime.NumGoroutine(), openFDs(t), heapInuse()
		p := samplePeaks(t)

		// The trap listener, hit by a few visitors while the flood runs.
		var trapOK, trapOther atomic.Int64
		stopFlood := make(chan struct{})
		go func() {
			defer close(stopFlood)
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					client := &http.Client{Timeout: 30 * time.Second}
					for range 200 {
						req, _ := http.NewRequest(http.MethodGet, env.Trap.URL+path, nil)
						req.Header.Set("User-Agent", fmt.Sprintf("visitor-%d", w))
						res, err := client.Do(req)
						if err != nil {
							trapOther.Add(1)
							continue
						}
						io.Copy(io.Discard, res.Body)
						res.Body.Close()
						if res.StatusCode == http.StatusOK {
							trapOK.Add(1)
						} else {
							trapOther.Add(1)
						}
					}
				}()
			}
			wg.Wait()
		}()
		tally := flood(t, env, a.ReadOnly, a.Org.ID, 20000, stopFlood)
		p.stop()
		t.Logf("%d messages over %d sockets: %d answered with data, errors %v, closes %v; trap: %d answered 200, %d not",
			tally.sent, tally.sockets, tally.data, tally.codes, tally.closes, trapOK.Load(), trapOther.Load())
		t.Logf("peaks: goroutines %d → %d, open files %d → %d, heap %d MB → %d MB",
			baseG, p.goroutines, baseFD, p.fds, baseHeap>>20, p.heap>>20)

		if tally.data == 0 {
			t.Errorf("no admitted query answered with data")
		}
		if tally.codes[server.CodeRateLimited] == 0 {
			t.Errorf("no operation refused with %s: %v", server.CodeRateLimited, tally.codes)
		}
		for code := range tally.codes {
			if code != server.CodeRateLimited {
				t.Errorf("operations answered %s: %v", code, tally.codes)
			}
		}
		// The server holds at most the per-connection cap of operations, each one goroutine
		// while it resolves (and a subscription's follower one while it reads its backlog);
		// the sockets and their readers come and go one at a time. Before the cap, one
		// goroutine per message: thousands.
		limit := server.DefaultConfig().WebsocketMaxOperations
		if extra := p.goroutines - baseG; extra > 2*limit+100 {
			t.Errorf("the flood took %d goroutines at its peak, want at most %d", extra, 2*limit+100)
		}
		if extra := p.fds - baseFD; extra > limit+50 {
			t.Errorf("the flood took %d open files at its peak, want at most %d", extra, limit+50)
		}
		if extra := int64(p.heap) - int64(baseHeap); extra > 64<<20 {
			t.Errorf("the heap grew by %d MB during the flood, want at most 64 MB", extra>>20)
		}
		if trapOther.Load() != 0 {
			t.Errorf("%d trap requests not answered 200 during the flood", trapOther.Load())
		}
		// Every hit the trap acknowledged is stored.
		want := hits0 + int(trapOK.Load())
		got := 0
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if got, err = env.DB.Client.Hit.Query().Count(sys); err != nil {
				t.Fatal(err)
			}
			if got >= want {
				break
			}
		}
		if got != want {
			t.Errorf("%d hits stored, want %d (%d acknowledged during the flood)", got-hits0, want-hits0, trapOK.Load())
		}
		// And once the flood is over, what it held is let go.
		waitSubscribers(t, env, 0)
		if got := goroutinesSettle(baseG + 10); got > baseG+10 {
			t.Errorf("%d goroutines left after the flood", got-baseG)
		}
		fds := openFDs(t)
		for deadline := time.Now().Add(10 * time.Second); fds > baseFD+10 && time.Now().Before(deadline); fds = openFDs(t) {
			time.Sleep(20 * time.Millisecond)
		}
		if fds > baseFD+10 {
			t.Errorf("%d open files left after the flood", fds-baseFD)
		}
	})
}
