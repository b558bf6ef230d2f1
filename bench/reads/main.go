// Command flytrap-reads times the reads of the dashboard and the API against a running
// Flytrap — usually one serving a database filled by flytrap-seed — and prints p50/p99 per
// read (docs/benchmarks.md, "Reads at 1M sessions"). It is a test tool: point it only at a server
// of your own. Each read is requested -n times by -c clients after -warm unmeasured requests.
//
//	flytrap-reads -url http://127.0.0.1:8080 -key ftk_… -db /tmp/big.db -org org_…
//
// With -db (the server's database) it also reads what needs ids from it: a deep sessions page
// (it looks up the session -deep places down the organization's list, last_seen descending,
// and requests the page after it, through REST and GraphQL), the sessions of the busiest and
// of the quietest trap (by the hourly counters), the detail of a typical and of the largest
// session, a deep events page (-deep events before the newest), and the organization's busiest
// webhook endpoint's deliveries, first page and -deep down. It opens the database as the
// server does (store.Open, which migrates the schema to its own): build it from the same
// commit as the server, or it undoes the server's newer indexes.
//
// With -ingest-rate N it also drives N hits a second into the trap listener (-trap-url) for
// as long as the reads run, so every read is timed under ingest (docs/benchmarks.md, "Reads
// at 1M under ingest"): open-loop, -ingest-conns connections, one visitor sending
// -ingest-one of the hits (one session that grows) and -ingest-visitors others the rest. With
// -db it sends them to the organization's active traps, with its site's verified host (the
// seed gives each organization's site one), reads the growing session's detail too, and
// counts the hits recorded against those answered. The ingest prints its own rate, latency
// (p50/p99/max from each request's scheduled time, and from its sending), errors and losses.
// Measure the listener's capacity first: -only none -ingest-for 20s with a rate it cannot
// reach, and take half what it answered.
//
//	flytrap-reads -url http://127.0.0.1:18611 -key ftk_… -db … -org org_… \
//	  -trap-url http://127.0.0.1:18612 -ingest-rate 1500 -ingest-conns 8
package main

import (
	"bytes"
	"cmp"
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

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/ent"
	entevent "github.com/flytrap/flytrap/ent/event"
	"github.com/flytrap/flytrap/ent/hithour"
	"github.com/flytrap/flytrap/ent/ja4campaign"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/ent/site"
	"github.com/flytrap/flytrap/ent/trap"
	"github.com/flytrap/flytrap/ent/trapsession"
	"github.com/flytrap/flytrap/ent/webhookdelivery"
	"github.com/flytrap/flytrap/store"
	"github.com/flytrap/flytrap/tally"
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

const sessionsSeverityCountQuery = `query { sessions(first: 50, where: {severity: critical}) { totalCount
  edges { node { id sourceIP userAgent classification score severity firstSeen lastSeen hitCount } } } }`

const analyticsQuery = `query { analytics { overview { totalHits24h agentsDetected tripwiresFired promptsCaptured activeTraps }
  severity { critical high medium low } timeline { hour hits } } }`

const sessionsTrapQuery = `query($trap: String!) { sessions(first: 50, where: {hasHitsWith: {trapID: $trap}}) {
  edges { cursor node { id sourceIP userAgent classification score severity firstSeen lastSeen hitCount } }
  pageInfo { hasNextPage endCursor } } }`

const sessionsFilteredQuery = `query($since: Time!) { sessions(first: 50, where: {classification: AI_AGENT, severityIn: [high, critical], lastSeenGTE: $since}) {
  edges { cursor node { id sourceIP userAgent classification score severity firstSeen lastSeen hitCount } }
  pageInfo { hasNextPage endCursor } } }`

// sessionHitsQuery is a session node with its hits connection (the API's way to page a session's hits).
const sessionHitsQuery = `query($id: ID!) { node(id: $id) { ... on Session { id classification severity hitCount
  hits(first: 50) { edges { node { id method path receivedAt kind status signals } } pageInfo { hasNextPage endCursor } } } } }`

const trapsQuery = `query { traps(first: 50) { edges { cursor node { id name path type active createdAt } } pageInfo { hasNextPage endCursor } } }`

const eventsQuery = `query($after: Cursor) { events(first: 100, after: $after) {
  edges { cursor node { id position type createdAt data } } pageInfo { hasNextPage endCursor } } }`

const endpointsQuery = `query { webhookEndpoints(first: 50) { edges { node { id url active format eventTypes } } pageInfo { hasNextPage } } }`

const deliveriesQuery = `query($ep: ID!, $after: Cursor) { webhookDeliveries(endpointID: $ep, first: 50, after: $after) {
  edges { cursor node { id eventType status attemptCount createdAt deliveredAt lastStatusCode } } pageInfo { hasNextPage endCursor } } }`

const sessionsSinceCountQuery = `query($since: Time!) { sessions(first: 50, where: {lastSeenGTE: $since}) { totalCount
  edges { node { id sourceIP userAgent classification score severity firstSeen lastSeen hitCount } } } }`

const campaignsQuery = `query { campaigns(first: 20) { edges { node { promptHash operator model sessionCount promptCount } } } }`

// campaignsPageQuery is the dashboard's campaigns page (web/src/queries.ts CAMPAIGNS).
const campaignsPageQuery = `query { campaigns(first: 20) { pageInfo { hasNextPage endCursor } edges { cursor node { promptHash operator model
  sessionCount promptCount firstSeen lastSeen sessions(first: 10) { id sourceIP userAgent classification severity lastSeen }
  addresses(first: 20) traps { id name path type deleted } } } } }`

// ja4CampaignsQuery is the dashboard's campaigns page by TLS client (web/src/queries.ts JA4_CAMPAIGNS).
const ja4CampaignsQuery = `query { ja4Campaigns(first: 20) { pageInfo { hasNextPage endCursor } edges { cursor node { id ja4 clientStack
  sessionCount hitCount firstSeen lastSeen sessions(first: 10) { id sourceIP userAgent classification severity lastSeen } addresses(first: 20) } } } }`

const sessionsJA4Query = `query($ja4: String!) { sessions(first: 50, where: {hasHitsWith: {ja4: $ja4}}) {
  edges { cursor node { id sourceIP userAgent classification score severity firstSeen lastSeen hitCount } }
  pageInfo { hasNextPage endCursor } } }`

// detailQuery is what the dashboard's session page asks for.
const detailQuery = `query($id: ID!) { sessionDetail(id: $id) { hitsTruncated
  session { id classification severity score explanation { rule ruleText parts { signal points } }
    signalGroups { signal placement count evidence } traps { id name } }
  hits { id method path receivedAt } signals { id name } prompts { id text } } }`

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
	trapURL := fs.String("trap-url", "", "the trap listener's base URL, for -ingest-rate")
	trapHost := fs.String("trap-host", "", "the Host the ingest's requests name (default: with -db, the organization's site's verified host)")
	trapPaths := fs.String("trap-paths", "", "comma-separated trap paths the ingest requests (default: with -db, the organization's active traps)")
	g := &ingest{}
	fs.Float64Var(&g.rate, "ingest-rate", 0, "hits per second driven into the trap listener while the reads run (0: none)")
	fs.IntVar(&g.conns, "ingest-conns", 8, "connections the ingest sends over, 1–1024")
	fs.IntVar(&g.visitors, "ingest-visitors", 1000, "visitors besides the one whose session grows, 1–1000000")
	fs.Float64Var(&g.share, "ingest-one", 0.5, "the share of the hits the one visitor sends, 0–1")
	warmIngest := fs.Duration("ingest-warm", 10*time.Second, "ingest before the first read (the growing session exists, the writer is busy)")
	forIngest := fs.Duration("ingest-for", 0, "ingest at least this long, reads or not")
	settle := fs.Duration("ingest-settle", 3*time.Second, "wait after the ingest before counting the hits recorded")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *key == "":
		return errors.New("-key (or FLYTRAP_KEY) is required")
	case *n < 1 || *n > 100000 || *c < 1 || *c > 256 || *warm < 0 || *deep < 1:
		return errors.New("-n 1–100000, -c 1–256, -warm ≥ 0, -deep ≥ 1")
	case g.rate < 0 || g.rate > 1e6 || g.conns < 1 || g.conns > 1024 || g.visitors < 1 || g.visitors > 1e6 || g.share < 0 || g.share > 1:
		return errors.New("-ingest-rate 0–1000000, -ingest-conns 1–1024, -ingest-visitors 1–1000000, -ingest-one 0–1")
	case g.rate > 0 && *trapURL == "":
		return errors.New("-ingest-rate needs -trap-url, the trap listener")
	case g.rate > 0 && *dsn == "" && *trapPaths == "":
		return errors.New("-ingest-rate needs -db (the organization's traps) or -trap-paths")
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
		{name: "GraphQL sessions severity=critical totalCount", graphql: sessionsSeverityCountQuery},
		{name: "GraphQL analytics (overview, severity, timeline)", graphql: analyticsQuery},
		{name: "GraphQL campaigns(first:20)", graphql: campaignsQuery},
		{name: "GraphQL campaigns, the dashboard's page", graphql: campaignsPageQuery},
		{name: "GraphQL ja4Campaigns, the dashboard's page", graphql: ja4CampaignsQuery},
		{name: "REST traps", path: "/dashboard/api/traps"},
		{name: "GraphQL traps(first:50)", graphql: trapsQuery},
		{name: "GraphQL events(first:100)", graphql: eventsQuery},
		{name: "GraphQL sessions AI_AGENT high+critical since 7d", graphql: sessionsFilteredQuery,
			vars: map[string]any{"since": time.Now().UTC().Add(-7 * 24 * time.Hour).Format(time.RFC3339)}},
		{name: "GraphQL sessions since=24h totalCount", graphql: sessionsSinceCountQuery,
			vars: map[string]any{"since": time.Now().UTC().Add(-24 * time.Hour).Format(time.RFC3339)}},
		{name: "REST events type=threat.escalated", path: "/api/v1/events?limit=100&type=threat.escalated"},
		{name: "REST events type=threat.* since=24h ago", path: "/api/v1/events?limit=100&type=threat.*&since=" + url.QueryEscape(time.Now().UTC().Add(-24*time.Hour).Format(time.RFC3339))},
		{name: "REST gate fail_on=high since=1h", path: "/dashboard/api/gate?fail_on=high&since=1h"},
		{name: "REST gate fail_on=low (all time)", path: "/dashboard/api/gate?fail_on=low"},
		{name: "REST sessions triage_state=open,acknowledged", path: "/dashboard/api/sessions?limit=50&triage_state=open,acknowledged"},
		{name: "REST webhooks", path: "/dashboard/api/webhooks"},
		{name: "GraphQL webhookEndpoints(first:50)", graphql: endpointsQuery},
	}
	var x ids
	if *dsn != "" {
		if *org == "" {
			return errors.New("-db needs -org, the key's organization")
		}
		var err error
		if x, err = lookUp(ctx, *dsn, *org, *deep); err != nil {
			return err
		}
		reads = append(reads, x.reads(*deep)...)
	}
	if g.rate > 0 {
		g.url, g.host, g.paths = strings.TrimRight(*trapURL, "/"), cmp.Or(*trapHost, x.host), x.trapPaths
		if *trapPaths != "" {
			var err error
			if g.paths, err = parsePaths(*trapPaths); err != nil {
				return err
			}
		}
		if len(g.paths) == 0 {
			return errors.New("-ingest-rate: the organization has no active trap; name paths with -trap-paths")
		}
		var before int64
		if *dsn != "" {
			var err error
			if before, err = hitsOf(ctx, *dsn, *org); err != nil {
				return err
			}
		}
		ictx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); g.run(ictx) }()
		finished := time.Now().Add(*forIngest)
		defer func() {
			// However the reads ended: the ingest runs its minimum, stops, and says how it went.
			time.Sleep(time.Until(finished))
			stop()
			<-done
			var recorded int64
			if *dsn != "" {
				time.Sleep(*settle)
				after, err := hitsOf(ctx, *dsn, *org)
				if err != nil {
					fmt.Fprintln(out, "ingest: count the hits recorded:", err)
				}
				recorded = after - before
			}
			g.report(out, recorded, *dsn != "")
		}()
		time.Sleep(*warmIngest)
		if *dsn != "" {
			grown, err := growingSession(ctx, *dsn, *org)
			if err != nil {
				return err
			}
			if grown != "" {
				reads = append(reads,
					read{name: "REST session detail, the growing session", path: "/dashboard/api/sessions/" + grown},
					read{name: "GraphQL sessionDetail, the growing session", graphql: detailQuery, vars: map[string]any{"id": grown}},
					read{name: "GraphQL session node + hits, the growing session", graphql: sessionHitsQuery, vars: map[string]any{"id": grown}})
			}
		}
	}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	fmt.Fprintf(out, "%-44s %10s %10s %10s\n", "read", "p50 ms", "p99 ms", "req/s")
	var failed []string
	for _, r := range reads {
		if *only != "" && !strings.Contains(r.name, *only) {
			continue
		}
		// A read that fails is reported and the run goes on: the reads after it still tell
		// something, and the summary names every failed one (the exit status is 1).
		do := func() error { return r.do(ctx, client, strings.TrimRight(*base, "/"), *key) }
		err := func() error {
			for range *warm {
				if err := do(); err != nil {
					return err
				}
			}
			lat, el, err := measure(do, *n, *c)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "%-44s %10.2f %10.2f %10.0f\n", r.name, ms(pct(lat, 50)), ms(pct(lat, 99)), float64(len(lat))/el.Seconds())
			return nil
		}()
		if err != nil {
			fmt.Fprintf(out, "%-44s FAILED: %v\n", r.name, err)
			failed = append(failed, r.name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d reads failed: %s", len(failed), strings.Join(failed, "; "))
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

// ids are what the reads that name rows read, looked up in the server's database.
type ids struct {
	sessionCursor, session, largest string
	busyTrap, quietTrap             string
	hammeredTrap                    string // the most hits per session (flytrap-seed's scanners'), "" when none has 100
	hammered                        string // "N hits from M sessions"
	commonJA4, rareJA4              string // the JA4s of the most and the fewest sessions
	commonJA4Size, rareJA4Size      string // "N sessions"
	eventCursor                     string // GraphQL's, after the event deep before the newest
	eventPosition                   int64
	endpoint, deliveryCursor        string   // the busiest endpoint, and the cursor -deep down its deliveries
	host                            string   // the organization's site's verified host, "" when none
	trapPaths                       []string // its active traps' paths, for the ingest
}

func (x ids) reads(deep int) []read {
	rest := strings.NewReplacer("+", "-", "/", "_")
	out := []read{
		{name: "REST session detail", path: "/dashboard/api/sessions/" + x.session},
		{name: "GraphQL sessionDetail (dashboard's page)", graphql: detailQuery, vars: map[string]any{"id": x.session}},
		{name: "GraphQL session node + hits(first:50)", graphql: sessionHitsQuery, vars: map[string]any{"id": x.session}},
		{name: "REST session detail, largest session", path: "/dashboard/api/sessions/" + x.largest},
		{name: "GraphQL sessionDetail, largest session", graphql: detailQuery, vars: map[string]any{"id": x.largest}},
		{name: "GraphQL session node + hits, largest", graphql: sessionHitsQuery, vars: map[string]any{"id": x.largest}},
		{name: fmt.Sprintf("REST sessions deep (after %d)", deep), path: "/dashboard/api/sessions?limit=50&cursor=" + url.QueryEscape(rest.Replace(x.sessionCursor))},
		{name: fmt.Sprintf("GraphQL sessions deep (after %d)", deep), graphql: sessionsQuery, vars: map[string]any{"after": x.sessionCursor}},
		{name: "REST sessions trap_id=busiest trap", path: "/dashboard/api/sessions?limit=50&trap_id=" + x.busyTrap},
		{name: "REST sessions trap_id=quietest trap", path: "/dashboard/api/sessions?limit=50&trap_id=" + x.quietTrap},
		{name: "GraphQL sessions hasHitsWith busiest trap", graphql: sessionsTrapQuery, vars: map[string]any{"trap": x.busyTrap}},
		{name: "GraphQL sessions hasHitsWith quietest trap", graphql: sessionsTrapQuery, vars: map[string]any{"trap": x.quietTrap}},
	}
	if x.commonJA4 != "" {
		out = append(out,
			read{name: "REST sessions ja4=commonest (" + x.commonJA4Size + ")", path: "/dashboard/api/sessions?limit=50&ja4=" + x.commonJA4},
			read{name: "GraphQL sessions hasHitsWith commonest JA4", graphql: sessionsJA4Query, vars: map[string]any{"ja4": x.commonJA4}},
			read{name: "REST sessions ja4=rarest (" + x.rareJA4Size + ")", path: "/dashboard/api/sessions?limit=50&ja4=" + x.rareJA4},
			read{name: "GraphQL sessions hasHitsWith rarest JA4", graphql: sessionsJA4Query, vars: map[string]any{"ja4": x.rareJA4}})
	}
	if x.hammeredTrap != "" {
		out = append(out,
			read{name: "REST sessions trap_id=hammered trap (" + x.hammered + ")", path: "/dashboard/api/sessions?limit=50&trap_id=" + x.hammeredTrap},
			read{name: "GraphQL sessions hasHitsWith hammered trap", graphql: sessionsTrapQuery, vars: map[string]any{"trap": x.hammeredTrap}})
	}
	if x.eventCursor != "" {
		out = append(out,
			read{name: fmt.Sprintf("REST events deep (%d before newest)", deep), path: "/api/v1/events?limit=100&cursor=" + app.EventCursor(x.eventPosition)},
			read{name: fmt.Sprintf("GraphQL events deep (%d before newest)", deep), graphql: eventsQuery, vars: map[string]any{"after": x.eventCursor}})
	}
	if x.endpoint != "" {
		out = append(out,
			read{name: "REST webhook deliveries limit=50", path: "/dashboard/api/webhooks/" + x.endpoint + "/deliveries?limit=50"},
			read{name: "REST webhook deliveries status=failed", path: "/dashboard/api/webhooks/" + x.endpoint + "/deliveries?limit=50&status=failed"},
			read{name: "GraphQL webhookDeliveries(first:50)", graphql: deliveriesQuery, vars: map[string]any{"ep": x.endpoint}})
		if x.deliveryCursor != "" {
			out = append(out,
				read{name: fmt.Sprintf("REST webhook deliveries deep (after %d)", deep), path: "/dashboard/api/webhooks/" + x.endpoint + "/deliveries?limit=50&cursor=" + url.QueryEscape(rest.Replace(x.deliveryCursor))},
				read{name: fmt.Sprintf("GraphQL webhookDeliveries deep (after %d)", deep), graphql: deliveriesQuery, vars: map[string]any{"ep": x.endpoint, "after": x.deliveryCursor}})
		}
	}
	return out
}

// lookUp finds in the server's database the rows the reads name.
func lookUp(ctx context.Context, dsn, org string, deep int) (ids, error) {
	var x ids
	db, err := store.Open(ctx, dsn)
	if err != nil {
		return x, err
	}
	defer db.Close()
	ctx = privacy.DecisionContext(ctx, privacy.Allow)
	c := db.Client
	s, err := c.Session.Query().Where(session.OrgID(org)).
		Order(ent.Desc(session.FieldLastSeen), ent.Desc(session.FieldID)).Offset(deep).First(ctx)
	if err != nil {
		return x, fmt.Errorf("session %d of the list: %w", deep, err)
	}
	x.sessionCursor, x.session = cursor(s.ID, s.LastSeen), s.ID
	big, err := c.Session.Query().Where(session.OrgID(org)).Order(ent.Desc(session.FieldHitCount)).First(ctx)
	if err != nil {
		return x, fmt.Errorf("the largest session: %w", err)
	}
	x.largest = big.ID
	// The traps by their hits, from the hourly counters; a trap without any is the quietest.
	traps, err := c.Trap.Query().Where(trap.OrgID(org)).All(ctx)
	if err != nil || len(traps) == 0 {
		return x, fmt.Errorf("the organization's traps: %v (%d)", err, len(traps))
	}
	var sums []struct {
		Trap string `json:"trap_id"`
		Hits int64  `json:"sum"`
	}
	if err := c.HitHour.Query().Where(hithour.OrgID(org), hithour.TrapIDNEQ("")).GroupBy(hithour.FieldTrapID).
		Aggregate(ent.Sum(hithour.FieldHits)).Scan(ctx, &sums); err != nil {
		return x, fmt.Errorf("hits per trap: %w", err)
	}
	hits := map[string]int64{}
	for _, h := range sums {
		hits[h.Trap] = h.Hits
	}
	slices.SortFunc(traps, func(a, b *ent.Trap) int { return cmp.Compare(hits[b.ID], hits[a.ID]) })
	x.busyTrap, x.quietTrap = traps[0].ID, traps[len(traps)-1].ID
	for _, t := range traps {
		if t.Active && t.Path != "" {
			x.trapPaths = append(x.trapPaths, t.Path)
		}
	}
	slices.Sort(x.trapPaths)
	if s, err := c.Site.Query().Where(site.OrgID(org), site.HostVerified(true), site.HostNotNil()).First(ctx); err == nil {
		x.host = *s.Host
	}
	// The trap with the most hits per session: many hits from a handful of sessions.
	var members []struct {
		Trap  string `json:"trap_id"`
		Count int64  `json:"count"`
	}
	if err := c.TrapSession.Query().Where(trapsession.OrgID(org)).GroupBy(trapsession.FieldTrapID).
		Aggregate(ent.Count()).Scan(ctx, &members); err != nil {
		return x, fmt.Errorf("sessions per trap: %w", err)
	}
	best := int64(100)
	for _, m := range members {
		if m.Count > 0 && hits[m.Trap]/m.Count >= best {
			best = hits[m.Trap] / m.Count
			x.hammeredTrap, x.hammered = m.Trap, fmt.Sprintf("%d hits from %d sessions", hits[m.Trap], m.Count)
		}
	}
	// The JA4s of the most and of the fewest sessions, from the maintained rows.
	if js, err := c.Ja4Campaign.Query().Where(ja4campaign.OrgID(org)).Order(ent.Desc(ja4campaign.FieldSessionCount)).All(ctx); err != nil {
		return x, fmt.Errorf("JA4 campaigns: %w", err)
	} else if len(js) > 0 {
		x.commonJA4, x.commonJA4Size = js[0].Ja4, fmt.Sprintf("%d sessions", js[0].SessionCount)
		x.rareJA4, x.rareJA4Size = js[len(js)-1].Ja4, fmt.Sprintf("%d sessions", js[len(js)-1].SessionCount)
	}
	if last, err := c.Event.Query().Where(entevent.OrgID(org)).Order(ent.Desc(entevent.FieldPosition)).First(ctx); err == nil {
		ev, err := c.Event.Query().Where(entevent.OrgID(org), entevent.PositionLTE(max(1, last.Position-int64(deep)))).
			Order(ent.Desc(entevent.FieldPosition)).First(ctx)
		if err != nil {
			return x, fmt.Errorf("event %d before the newest: %w", deep, err)
		}
		x.eventCursor, x.eventPosition = cursor(ev.ID, ev.Position), ev.Position
	} else if !ent.IsNotFound(err) {
		return x, err
	}
	var eps []struct {
		Endpoint string `json:"endpoint_id"`
		Count    int    `json:"count"`
	}
	if err := c.WebhookDelivery.Query().Where(webhookdelivery.OrgID(org)).GroupBy(webhookdelivery.FieldEndpointID).
		Aggregate(ent.Count()).Scan(ctx, &eps); err != nil {
		return x, fmt.Errorf("deliveries per endpoint: %w", err)
	}
	slices.SortFunc(eps, func(a, b struct {
		Endpoint string `json:"endpoint_id"`
		Count    int    `json:"count"`
	}) int {
		return cmp.Compare(b.Count, a.Count)
	})
	if len(eps) > 0 {
		x.endpoint = eps[0].Endpoint
		d, err := c.WebhookDelivery.Query().Where(webhookdelivery.EndpointID(x.endpoint)).
			Order(ent.Desc(webhookdelivery.FieldCreatedAt), ent.Desc(webhookdelivery.FieldID)).Offset(min(deep, eps[0].Count-1)).First(ctx)
		if err != nil {
			return x, fmt.Errorf("delivery %d of the list: %w", deep, err)
		}
		x.deliveryCursor = cursor(d.ID, d.CreatedAt)
	}
	return x, nil
}

// hitsOf is the organization's hits as its hourly counters hold them (tally.AllTraps rows).
func hitsOf(ctx context.Context, dsn, org string) (int64, error) {
	db, err := store.Open(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	ctx = privacy.DecisionContext(ctx, privacy.Allow)
	var rows []struct {
		Sum int64 `json:"sum"`
	}
	err = db.Client.HitHour.Query().Where(hithour.OrgID(org), hithour.TrapID(tally.AllTraps)).
		Aggregate(ent.Sum(hithour.FieldHits)).Scan(ctx, &rows)
	if err != nil || len(rows) == 0 {
		return 0, fmt.Errorf("the organization's hits: %v", err)
	}
	return rows[0].Sum, nil
}

// growingSession is the newest session of the ingest's one visitor, "" when it has none yet.
func growingSession(ctx context.Context, dsn, org string) (string, error) {
	db, err := store.Open(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer db.Close()
	ctx = privacy.DecisionContext(ctx, privacy.Allow)
	s, err := db.Client.Session.Query().Where(session.OrgID(org), session.UserAgent(oneVisitorUA)).
		Order(ent.Desc(session.FieldLastSeen)).First(ctx)
	if ent.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("the growing session: %w", err)
	}
	return s.ID, nil
}

// cursor is entgql's cursor of a row with id and order value v.
func cursor(id string, v any) string {
	var b strings.Builder
	entgql.Cursor[string]{ID: id, Value: v}.MarshalGQL(&b)
	return strings.Trim(b.String(), `"`)
}

func pct(s []time.Duration, p int) time.Duration {
	i := (len(s)*p + 99) / 100
	return s[max(0, min(i, len(s))-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
