package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/ent"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// seedBigSession writes a session of n hits with 16 KiB bodies, as n POSTs of 16 KiB to a trap
// leave it: every other body is control characters, which JSON writes six bytes each.
func seedBigSession(tb testing.TB, env *ft.Env, org string, n int) *ent.Session {
	tb.Helper()
	start := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	s, err := env.DB.Client.Session.Create().SetOrgID(org).SetSourceIP("203.0.113.9").SetUserAgent("flood/1.0").
		SetFirstSeen(start).SetLastSeen(start.Add(time.Duration(n) * time.Millisecond)).SetHitCount(n).Save(ft.System())
	if err != nil {
		tb.Fatalf("seed session: %v", err)
	}
	plain, escaped := strings.Repeat("a", 16<<10), strings.Repeat("\x01", 16<<10)
	for i := 0; i < n; i += 200 {
		var bulk []*ent.HitCreate
		for j := i; j < min(n, i+200); j++ {
			body := plain
			if j%2 == 1 {
				body = escaped
			}
			at := start.Add(time.Duration(j) * time.Millisecond)
			bulk = append(bulk, env.DB.Client.Hit.Create().SetOrgID(org).SetSessionID(s.ID).SetMethod("POST").SetPath("/api/chat").
				SetSourceIP(s.SourceIP).SetUserAgent(s.UserAgent).SetHeaders(map[string][]string{"Content-Type": {"text/plain"}}).
				SetBody(body).SetReceivedAt(at).SetReceivedHour(at.Unix()/3600))
		}
		if _, err := env.DB.Client.Hit.CreateBulk(bulk...).Save(ft.System()); err != nil {
			tb.Fatalf("seed hits: %v", err)
		}
	}
	return s
}

// dashboardSessionQuery is the dashboard's own session detail query (web/src/queries.ts).
func dashboardSessionQuery(tb testing.TB) string {
	src, err := os.ReadFile("../web/src/queries.ts")
	if err != nil {
		tb.Fatal(err)
	}
	m := regexp.MustCompile("(?s)SESSION = `([^`]*)`").FindSubmatch(src)
	if m == nil {
		tb.Fatal("the dashboard's SESSION query is not in web/src/queries.ts")
	}
	fields := regexp.MustCompile(`(?s)SESSION_FIELDS = ` + "`([^`]*)`").FindSubmatch(src)
	if fields == nil {
		tb.Fatal("SESSION_FIELDS is not in web/src/queries.ts")
	}
	return strings.ReplaceAll(string(m[1]), "${SESSION_FIELDS}", string(fields[1]))
}

// A session's detail is priced and bounded by bytes: five aliases of it returned 83 MB
// (1,200 hits of 16 KiB from one visitor); now they are refused, and one detail holds the
// newest hits whose text fits --session-detail-bytes, on both APIs.
func TestSessionDetailBoundedByBytes(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		s := seedBigSession(t, env, a.Org.ID, 1200)
		vars := map[string]any{"id": s.ID}
		budget := env.Config.SessionDetailBytes

		hits := `hits { id trapID method path query headers body bodyTruncated sourceIP userAgent receivedAt kind status signals }`
		var q strings.Builder
		q.WriteString(`query($id: ID!) {`)
		for i := range 5 {
			fmt.Fprintf(&q, ` d%d: sessionDetail(id: $id) { hitsTruncated %s }`, i, hits)
		}
		q.WriteString(` }`)
		r := env.GraphQL(a.ReadOnly, q.String(), vars)
		if r.Code() != "COMPLEXITY_LIMIT_EXCEEDED" || r.Data != nil {
			t.Fatalf("5 aliases of sessionDetail: %d %.300s", r.Status, r.Raw)
		}
		// Aliases of the bodies alone add up too: the price counts what they can return
		// (three return at most 3 MiB of text; four are over the limit).
		q.Reset()
		q.WriteString(`query($id: ID!) {`)
		for i := range 4 {
			fmt.Fprintf(&q, ` d%d: sessionDetail(id: $id) { hits { body headers } }`, i)
		}
		q.WriteString(` }`)
		if r = env.GraphQL(a.ReadOnly, q.String(), vars); r.Code() != "COMPLEXITY_LIMIT_EXCEEDED" {
			t.Errorf("4 aliases of sessionDetail's bodies: %d %.300s", r.Status, r.Raw)
		}

		// The dashboard's query answers, within the budget, newest hits kept.
		r = env.GraphQL(a.ReadOnly, dashboardSessionQuery(t), vars)
		wantOK(t, r)
		list := ft.Dig(r.Data, "sessionDetail", "hits").([]any)
		if len(list) < 2 || len(list) >= 1000 || ft.Dig(r.Data, "sessionDetail", "hitsTruncated") != true {
			t.Errorf("GraphQL detail: %d hits, hitsTruncated %v; want a few, truncated", len(list), ft.Dig(r.Data, "sessionDetail", "hitsTruncated"))
		}
		newest := ft.Dig(list[len(list)-1], "receivedAt")
		if len(r.Raw) > budget+64<<10 {
			t.Errorf("GraphQL detail is %d bytes, want at most the %d-byte budget and a little", len(r.Raw), budget)
		}

		res, body := env.Get(a.ReadOnly, "/dashboard/api/sessions/"+s.ID)
		if res.StatusCode != 200 {
			t.Fatalf("REST detail: %d %.300s", res.StatusCode, body)
		}
		if len(body) > budget+64<<10 {
			t.Errorf("REST detail is %d bytes, want at most the %d-byte budget and a little", len(body), budget)
		}
		var rest struct {
			Data struct {
				Hits []struct {
					ReceivedAt string `json:"received_at"`
				} `json:"hits"`
				HitsTruncated bool `json:"hits_truncated"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &rest); err != nil {
			t.Fatal(err)
		}
		if len(rest.Data.Hits) != len(list) || !rest.Data.HitsTruncated {
			t.Errorf("REST detail: %d hits, truncated %v; GraphQL %d", len(rest.Data.Hits), rest.Data.HitsTruncated, len(list))
		}
		got := rest.Data.Hits[len(rest.Data.Hits)-1].ReceivedAt
		restAt, err1 := time.Parse(time.RFC3339Nano, got)
		gqlAt, err2 := time.Parse(time.RFC3339Nano, str(newest))
		if err1 != nil || err2 != nil || !restAt.Equal(gqlAt) { // GraphQL drops a trailing zero of the milliseconds
			t.Errorf("newest hit: REST %s, GraphQL %v", got, newest)
		}
	})
}

// The byte budget is a flag; the price follows it.
func TestSessionDetailBytesFlag(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) { c.SessionDetailBytes = app.MinDetailBytes })
	a := env.Tenant("acme")
	s := seedBigSession(t, env, a.Org.ID, 40)
	d := env.MustGraphQL(a.ReadOnly, `query($id: ID!) { a: sessionDetail(id: $id) { hits { body } } b: sessionDetail(id: $id) { hits { body } } }`, map[string]any{"id": s.ID})
	n := len(ft.Dig(d, "a", "hits").([]any))
	if n < 1 || n > app.MinDetailBytes/(16<<10) {
		t.Errorf("%d hits of 16 KiB in a %d-byte detail", n, app.MinDetailBytes)
	}
}

// BenchmarkSessionDetailHeap: peak heap while 8 clients read the detail of a session of 1,200
// hits of 16 KiB at once (the finding: 131 MB → 3.3 GB with five aliases each).
//
//	go test ./server/ -run '^$' -bench SessionDetailHeap -benchtime 3x
func BenchmarkSessionDetailHeap(b *testing.B) {
	env := ft.Start(b, ft.Backends()[0])
	a := env.Tenant("acme")
	s := seedBigSession(b, env, a.Org.ID, 1200)
	query := dashboardSessionQuery(b)
	for _, api := range []string{"graphql", "rest"} {
		b.Run(api, func(b *testing.B) {
			runtime.GC()
			var base runtime.MemStats
			runtime.ReadMemStats(&base)
			peak, bytes := uint64(0), 0
			done := make(chan struct{})
			var sampler sync.WaitGroup
			sampler.Add(1)
			go func() {
				defer sampler.Done()
				var m runtime.MemStats
				for {
					select {
					case <-done:
						return
					case <-time.After(5 * time.Millisecond):
						runtime.ReadMemStats(&m)
						peak = max(peak, m.HeapAlloc)
					}
				}
			}()
			for b.Loop() {
				var wg sync.WaitGroup
				var mu sync.Mutex
				for range 8 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						var n int
						if api == "graphql" {
							n = len(env.GraphQL(a.ReadOnly, query, map[string]any{"id": s.ID}).Raw)
						} else {
							_, body := env.Get(a.ReadOnly, "/dashboard/api/sessions/"+s.ID)
							n = len(body)
						}
						mu.Lock()
						bytes = n
						mu.Unlock()
					}()
				}
				wg.Wait()
			}
			close(done)
			sampler.Wait()
			b.ReportMetric(float64(bytes), "response-bytes")
			b.ReportMetric(float64(peak-min(peak, base.HeapAlloc))/(1<<20), "peak-heap-MB")
		})
	}
}
