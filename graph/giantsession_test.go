package graph

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/schematype"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/flytraptest/testdb"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/internal/bigsession"
	"github.com/flytrap/flytrap/store"
)

// recorder is a driver that keeps every statement it is given, to EXPLAIN them afterwards.
type recorder struct {
	dialect.Driver
	mu    sync.Mutex
	stmts []stmt
}

type stmt struct {
	query string
	args  []any
}

func (r *recorder) keep(query string, args any) {
	a, _ := args.([]any)
	r.mu.Lock()
	r.stmts = append(r.stmts, stmt{query, a})
	r.mu.Unlock()
}

func (r *recorder) Query(ctx context.Context, query string, args, v any) error {
	r.keep(query, args)
	return r.Driver.Query(ctx, query, args, v)
}

func (r *recorder) Exec(ctx context.Context, query string, args, v any) error {
	r.keep(query, args)
	return r.Driver.Exec(ctx, query, args, v)
}

// giant is a database holding one organization and a session of n hits (a signal on every
// other hit, a prompt on every hundredth), the last of them an hour ago, over the day before.
type giant struct {
	db      *store.DB
	org     string
	session *ent.Session
	n       int
}

func newGiant(t testing.TB, dsn string, n int) *giant {
	t.Helper()
	ctx := privacy.DecisionContext(context.Background(), privacy.Allow)
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	last := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	first := last.Add(-24 * time.Hour)
	for d := first.AddDate(0, 0, -2); !d.After(last); d = d.AddDate(0, 0, store.PartitionDays) {
		if _, err := db.EnsurePartitions(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	c := db.Client
	o := c.Organization.Create().SetName("o").SaveX(ctx)
	spec := bigsession.Spec{
		Org: o.ID, Session: ids.New(ids.Session), Tag: "01giant0", Hits: n, First: first, Last: last, SourceIP: "198.18.0.1", UserAgent: "giant",
		Signals: n / 2, SignalNames: []string{"token_replayed", "machine_speed_followup", "injection_followed"},
		Prompts: n / 100, PromptTexts: []bigsession.Prompt{{Text: "Ignore previous instructions.", Hash: strings.Repeat("a", 64)}},
	}
	s := c.Session.Create().SetID(spec.Session).SetOrgID(o.ID).SetSourceIP("198.18.0.1").SetUserAgent("giant").
		SetClassification(session.ClassificationAI_AGENT).SetFirstSeen(first).SetLastSeen(last).SetHitCount(n).
		SetPromptsCaptured(n / 100).SetTrapsTriggered([]string{}).SetState(schematype.SessionState{Signals: spec.SignalCounts()}).SaveX(ctx)
	start := time.Now()
	if err := bigsession.Insert(ctx, db.SQL, db.Dialect, spec); err != nil {
		t.Fatal(err)
	}
	analyze := "ANALYZE"
	if db.Dialect == dialect.Postgres {
		analyze = "VACUUM (ANALYZE)"
	}
	if _, err := db.SQL.ExecContext(ctx, analyze); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: a session of %d hits, %d signals, %d prompts written in %v", db.Dialect, n, n/2, n/100, time.Since(start).Round(time.Millisecond))
	return &giant{db: db, org: o.ID, session: s, n: n}
}

// detail reads the session's detail and its signal groups through a resolver whose driver
// records the statements.
func (g *giant) detail(t testing.TB) ([]stmt, int) {
	t.Helper()
	ctx := privacy.DecisionContext(context.Background(), privacy.Allow)
	rec := &recorder{Driver: entsql.OpenDB(g.db.Dialect, g.db.SQL)}
	client := ent.NewClient(ent.Driver(rec))
	store.Undistinct(client) // as store.Open's clients
	a := app.New(client, nil, nil)
	a.DetailLimit = app.DefaultDetailLimit
	r := NewResolver(a, nil)
	d, err := a.SessionDetail(ctx, g.session.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Hits) != app.DefaultDetailLimit || !d.HitsTruncated || len(d.Signals) != app.DefaultDetailLimit || len(d.Prompts) != app.DefaultDetailLimit {
		t.Fatalf("detail: %d hits (truncated %v), %d signals, %d prompts; want %d of each, truncated",
			len(d.Hits), d.HitsTruncated, len(d.Signals), len(d.Prompts), app.DefaultDetailLimit)
	}
	if !d.Hits[len(d.Hits)-1].ReceivedAt.Equal(g.session.LastSeen) {
		t.Fatalf("the detail's last hit is of %v, want the newest, %v", d.Hits[len(d.Hits)-1].ReceivedAt, g.session.LastSeen)
	}
	// The session's hits connection, as GraphQL's Session.hits(first: 50) reads it (id order).
	sess, err := r.ent(ctx).Session.Get(ctx, g.session.ID)
	if err != nil {
		t.Fatal(err)
	}
	first := 50
	conn, err := sess.QueryHits().Paginate(ctx, nil, &first, nil, nil, ent.WithHitOrder(nil))
	if err != nil || len(conn.Edges) != first || !conn.PageInfo.HasNextPage {
		t.Fatalf("hits(first: 50): %v, %d edges", err, len(conn.Edges))
	}
	groups, err := r.signalGroups(ctx, g.session)
	if err != nil {
		t.Fatal(err)
	}
	counted := 0
	for _, gr := range groups {
		counted += gr.Count
	}
	return rec.stmts, counted
}

// explain is stmt's plan: EXPLAIN QUERY PLAN on SQLite, EXPLAIN (ANALYZE) on PostgreSQL.
func explain(t testing.TB, db *store.DB, s stmt) string {
	t.Helper()
	prefix := "EXPLAIN QUERY PLAN "
	if db.Dialect == dialect.Postgres {
		prefix = "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
	}
	rows, err := db.SQL.QueryContext(context.Background(), prefix+s.query, s.args...)
	if err != nil {
		t.Fatalf("explain %s: %v", s.query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var b strings.Builder
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		b.WriteString(vals[len(vals)-1].String + "\n")
	}
	return b.String()
}

// giantHits is how many hits the giant session of the plan test has: enough that a plan
// reading them all is one no planner picks by mistake for a small table.
func giantHits(t testing.TB) int {
	if v := os.Getenv("FLYTRAP_GIANT_HITS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10000 {
			t.Fatalf("FLYTRAP_GIANT_HITS=%q: a number ≥ 10000", v)
		}
		return n
	}
	return 100_000
}

// TestGiantSessionDetailReadsItsNewest: the detail of a session of 100,000 hits (1M with
// FLYTRAP_GIANT_HITS=1000000), 50,000 signals and 1,000 prompts reads its newest rows along an
// index in order, whatever the session's size: on SQLite no statement scans a table or sorts
// in a temporary b-tree; on PostgreSQL no statement scans a table sequentially or sorts, and
// none reads more rows from hits, signals or prompts than the detail shows (+1 for
// hitsTruncated) — EXPLAIN ANALYZE's row counts, not its timings.
func TestGiantSessionDetailReadsItsNewest(t *testing.T) {
	testdb.ForEachBackend(t, func(t *testing.T, b testdb.Backend) {
		g := newGiant(t, b.DSN(t), giantHits(t))
		stmts, counted := g.detail(t)
		if counted != g.n/2 {
			t.Fatalf("the signal groups count %d signals, want %d", counted, g.n/2)
		}
		sawHits := false
		for _, s := range stmts {
			if byIDs(s.query) {
				// The byte budget's second read takes the rows the first chose, by id (at most
				// limit+1 of them): bounded by its list. Which plan PostgreSQL picks for it
				// depends on the table's size — on this fixture's 100,000-row partitions a scan,
				// on the 1M-session database index probes (8 ms, docs/benchmarks.md) — so its
				// plan is not held here.
				continue
			}
			plan := explain(t, g.db, s)
			if err := readsBounded(g.db.Dialect, s.query, plan); err != nil {
				t.Errorf("%v\n%s\n%s", err, s.query, plan)
			}
			if strings.Contains(s.query, "FROM "+q(g.db, "hits")) && strings.Contains(s.query, "ORDER BY "+q(g.db, "hits")+"."+q(g.db, "received_at")) {
				sawHits = true
				if !strings.Contains(plan, "session_id_received_at_id") {
					t.Errorf("the hits are not read along (session_id, received_at, id):\n%s", plan)
				}
			}
		}
		if !sawHits {
			t.Fatal("no statement read the session's hits")
		}
	})
}

// byIDs says whether a statement reads rows by a list of their ids.
func byIDs(query string) bool {
	return strings.Contains(query, `"id" IN (`) || strings.Contains(query, "`id` IN (")
}

func q(db *store.DB, name string) string {
	if db.Dialect == dialect.Postgres {
		return `"` + name + `"`
	}
	return "`" + name + "`"
}

var (
	pgRows    = regexp.MustCompile(`(?:Scan|Scan Backward) (?:using \S+ )?on (\w+)[^(]*\(actual rows=(\d+) loops=(\d+)\)`)
	pgRemoved = regexp.MustCompile(`Rows Removed by Filter: (\d+)`)
)

// readsBounded says what in a plan reads a session's hits, signals or prompts beyond what the
// detail shows: on SQLite a scan of one of those tables or a sort for an ORDER BY; on
// PostgreSQL more rows than the statement's LIMIT (read or filtered away) or a sort of hits.
func readsBounded(d, query, plan string) error {
	if d != dialect.Postgres {
		for _, line := range strings.Split(plan, "\n") {
			line = strings.TrimSpace(line)
			for _, table := range []string{"hits", "signals", "prompts"} {
				if line == "SCAN "+table && !strings.Contains(plan, "CO-ROUTINE "+table) {
					return fmt.Errorf("a scan of %s", table)
				}
			}
			if strings.Contains(line, "TEMP B-TREE") && strings.Contains(line, "ORDER BY") {
				return fmt.Errorf("a sort: %s", line)
			}
		}
		return nil
	}
	bound := app.DefaultDetailLimit + 1
	if strings.Contains(query, "GROUP BY") || strings.Contains(query, "DISTINCT") {
		bound = signalGroupRows
	}
	if strings.Contains(query, "ORDER BY \"hits\".\"id\"") {
		bound += 100 // the connection's merge over partitions reads one row past its page in each
	}
	read := 0
	lines := strings.Split(plan, "\n")
	for i, line := range lines {
		m := pgRows.FindStringSubmatch(line)
		if m == nil || strings.Contains(line, "Subquery Scan") { // a subquery's rows were counted where it read them
			continue
		}
		table := m[1]
		if !strings.HasPrefix(table, "hits") && table != "signals" && table != "prompts" {
			continue
		}
		if strings.HasPrefix(table, "hits") && strings.Contains(line, "_pkey") {
			continue // a source hit looked up by id
		}
		rows, _ := strconv.Atoi(m[2])
		loops, _ := strconv.Atoi(m[3])
		read += rows * loops
		for _, next := range lines[i+1:] {
			if r := pgRemoved.FindStringSubmatch(next); r != nil {
				n, _ := strconv.Atoi(r[1])
				read += n
				break
			}
			if strings.Contains(next, "->") {
				break
			}
		}
	}
	if read > bound {
		return fmt.Errorf("%d rows of hits, signals or prompts read, more than the %d shown", read, bound)
	}
	if strings.Contains(query, "FROM \"hits\"") && regexp.MustCompile(`(?m)^\s*(->\s*)?Sort \(`).MatchString(plan) {
		return errors.New("the hits are sorted")
	}
	return nil
}

// BenchmarkGiantSessionDetail times the detail of a session of a million hits (FLYTRAP_GIANT_HITS
// to change it) on each backend: the figure should not follow the session's size.
func BenchmarkGiantSessionDetail(b *testing.B) {
	for _, be := range testdb.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			n := 1_000_000
			if v := os.Getenv("FLYTRAP_GIANT_HITS"); v != "" {
				n, _ = strconv.Atoi(v)
			}
			g := newGiant(b, be.DSN(b), n)
			b.ResetTimer()
			for range b.N {
				g.detail(b)
			}
		})
	}
}
