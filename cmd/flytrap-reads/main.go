// Command flytrap-reads times the reads of the dashboard and the API against a running
// Flytrap — usually one serving a database filled by flytrap-seed — and prints p50/p99 per
// read (docs/benchmarks.md, "Reads at scale"). It is a test tool: point it only at a server
// of your own. Each read is requested -n times by -c clients after -warm unmeasured requests.
//
//	flytrap-reads -url http://127.0.0.1:8080 -key ftk_… -db /tmp/big.db -org org_…
//
// With -db (the server's database) it also reads a deep sessions page: it looks up the
// session -deep places down the organization's list (last_seen descending) and requests the
// page after it, through REST and GraphQL.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"entgo.io/contrib/entgql"
	"entgo.io/ent/privacy"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/store"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "flytrap-reads:", err)
		os.Exit(1)
	}
}

type read struct {
	name    string
	path    string // GET path, or "" for GraphQL
	graphql string
	vars    map[string]any
}

const sessionsQuery = `query($after: Cursor) { sessions(first: 50, after: $after) {
  edges { cursor node { id sourceIP userAgent classification score severity firstSeen lastSeen hitCount } }
  pageInfo { hasNextPage endCursor } } }`

const sessionsCountQuery = `query { sessions(first: 50) { totalCount
  edges { node { id sourceIP userAgent classification score severity firstSeen lastSeen hitCount } } } }`

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("flytrap-reads", flag.ContinueOnError)
	base := fs.String("url", "http://127.0.0.1:8080", "the API's base URL")
	key := fs.String("key", os.Getenv("FLYTRAP_KEY"), "a read key of the organization to read (default $FLYTRAP_KEY)")
	n := fs.Int("n", 100, "measured requests per read, 1–100000")
	c := fs.Int("c", 1, "concurrent clients, 1–256")
	warm := fs.Int("warm", 5, "unmeasured requests per read first")
	dsn := fs.String("db", "", "the server's database (SQLite path or postgres:// URL), for the deep page")
	org := fs.String("org", "", "the key's organization (flytrap-seed prints it), with -db")
	deep := fs.Int("deep", 10000, "how far down the list the deep page starts")
	only := fs.String("only", "", "run only the reads whose name contains this")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *key == "":
		return errors.New("-key (or FLYTRAP_KEY) is required")
	case *n < 1 || *n > 100000 || *c < 1 || *c > 256 || *warm < 0 || *deep < 1:
		return errors.New("-n 1–100000, -c 1–256, -warm ≥ 0, -deep ≥ 1")
	}
	reads := []read{
		{name: "REST sessions limit=50", path: "/dashboard/api/sessions?limit=50"},
		{name: "REST sessions limit=1", path: "/dashboard/api/sessions?limit=1"},
		{name: "REST sessions classification=AI_AGENT", path: "/dashboard/api/sessions?limit=50&classification=AI_AGENT"},
		{name: "REST sessions severity=critical", path: "/dashboard/api/sessions?limit=50&severity=critical"},
		{name: "REST sessions since=24h ago", path: "/dashboard/api/sessions?limit=50&since=" + url.QueryEscape(time.Now().UTC().Add(-24*time.Hour).Format(time.RFC3339))},
		{name: "REST overview", path: "/dashboard/api/analytics/overview"},
		{name: "REST severity", path: "/dashboard/api/analytics/severity"},
		{name: "REST timeline", path: "/dashboard/api/analytics/timeline"},
		{name: "REST events limit=100", path: "/api/v1/events?limit=100"},
		{name: "GraphQL sessions(first:50)", graphql: sessionsQuery},
		{name: "GraphQL sessions(first:50) totalCount", graphql: sessionsCountQuery},
	}
	if *dsn != "" {
		if *org == "" {
			return errors.New("-db needs -org, the key's organization")
		}
		cur, err := deepCursor(ctx, *dsn, *org, *deep)
		if err != nil {
			return err
		}
		rest := strings.NewReplacer("+", "-", "/", "_").Replace(cur)
		reads = append(reads,
			read{name: fmt.Sprintf("REST sessions deep (after %d)", *deep), path: "/dashboard/api/sessions?limit=50&cursor=" + url.QueryEscape(rest)},
			read{name: fmt.Sprintf("GraphQL sessions deep (after %d)", *deep), graphql: sessionsQuery, vars: map[string]any{"after": cur}})
	}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	fmt.Fprintf(out, "%-44s %10s %10s %10s\n", "read", "p50 ms", "p99 ms", "req/s")
	for _, r := range reads {
		if *only != "" && !strings.Contains(r.name, *only) {
			continue
		}
		do := func() error { return r.do(ctx, client, strings.TrimRight(*base, "/"), *key) }
		for range *warm {
			if err := do(); err != nil {
				return fmt.Errorf("%s: %w", r.name, err)
			}
		}
		lat, el, err := measure(do, *n, *c)
		if err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		fmt.Fprintf(out, "%-44s %10.2f %10.2f %10.0f\n", r.name, ms(pct(lat, 50)), ms(pct(lat, 99)), float64(len(lat))/el.Seconds())
	}
	return nil
}

// measure runs do n times over c clients and returns the sorted latencies and the wall time.
func measure(do func() error, n, c int) ([]time.Duration, time.Duration, error) {
	var (
		mu   sync.Mutex
		lat  = make([]time.Duration, 0, n)
		errs []error
		wg   sync.WaitGroup
		jobs = make(chan struct{}, n)
	)
	for range n {
		jobs <- struct{}{}
	}
	close(jobs)
	start := time.Now()
	for range c {
		wg.Go(func() {
			for range jobs {
				t := time.Now()
				err := do()
				d := time.Since(t)
				mu.Lock()
				lat = append(lat, d)
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	if len(errs) > 0 {
		return nil, 0, errs[0]
	}
	slices.Sort(lat)
	return lat, el, nil
}

func (r read) do(ctx context.Context, client *http.Client, base, key string) error {
	var req *http.Request
	var err error
	if r.path != "" {
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, base+r.path, nil)
	} else {
		body, _ := json.Marshal(map[string]any{"query": r.graphql, "variables": r.vars})
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, base+"/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	}
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %.300s", resp.StatusCode, b)
	}
	if r.path == "" && bytes.Contains(b, []byte(`"errors"`)) {
		return fmt.Errorf("GraphQL errors: %.300s", b)
	}
	return nil
}

// deepCursor is the cursor of the session deep places down org's list.
func deepCursor(ctx context.Context, dsn, org string, deep int) (string, error) {
	db, err := store.Open(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer db.Close()
	ctx = privacy.DecisionContext(ctx, privacy.Allow)
	s, err := db.Client.Session.Query().Where(session.OrgID(org)).
		Order(ent.Desc(session.FieldLastSeen), ent.Desc(session.FieldID)).Offset(deep).First(ctx)
	if err != nil {
		return "", fmt.Errorf("session %d of the list: %w", deep, err)
	}
	var b strings.Builder
	entgql.Cursor[string]{ID: s.ID, Value: s.LastSeen}.MarshalGQL(&b)
	return strings.Trim(b.String(), `"`), nil
}

func pct(s []time.Duration, p int) time.Duration {
	i := (len(s)*p + 99) / 100
	return s[max(0, min(i, len(s))-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
