package retention_test

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/oklog/ulid/v2"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/schematype"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/retention"
	"github.com/flytrap/flytrap/store"
)

// The layouts of hits compared on PostgreSQL: partitioned by day (the default of a new
// database) and a plain table (--pg-partitions=false).
var layouts = []struct {
	name string
	opts store.Options
}{{"plain", store.Options{NoPartitions: true}}, {"partitioned", store.Options{}}}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// benchDB is a fresh PostgreSQL database with hits laid out as l says; when partitioned,
// the days from 46 days ago to a week ahead have their partitions, as the service makes them.
func benchDB(b *testing.B, opts store.Options) *store.DB {
	b.Helper()
	db, err := store.OpenWith(context.Background(), ft.PostgresDSN(b), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if !opts.NoPartitions {
		for d := time.Now().AddDate(0, 0, -46); d.Before(time.Now()); d = d.AddDate(0, 0, store.PartitionDays) {
			if _, err := db.EnsurePartitions(context.Background(), d); err != nil {
				b.Fatal(err)
			}
		}
	}
	return db
}

// copyHits bulk-loads hits through COPY (the documented bulk path, not the writer): for
// each i < n, a hit of session(i) received at at(i), with an id of that time, a browser's
// headers and a 300-byte body.
func copyHits(b *testing.B, db *store.DB, org string, n int, session func(int) string, at func(int) time.Time) {
	b.Helper()
	tx, err := db.SQL.Begin()
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	st, err := tx.Prepare(pq.CopyIn("hits", "id", "org_id", "session_id", "method", "path", "headers", "body",
		"source_ip", "user_agent", "received_at", "received_hour", "signals"))
	if err != nil {
		b.Fatal(err)
	}
	headers := schematype.Headers{"Accept": {"text/html,application/xhtml+xml"}, "Accept-Language": {"en-US,en;q=0.9"},
		"User-Agent": {"Mozilla/5.0 (bench)"}}.String()
	body := strings.Repeat("b", 300)
	for i := range n {
		t := at(i).UTC()
		if _, err := st.Exec(idAt(ids.Hit, t), org, session(i), "GET", "/internal/docs", headers, body,
			"198.51.100.7", "Mozilla/5.0 (bench)", t, t.Unix()/3600, "[]"); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := st.Exec(); err != nil {
		b.Fatal(err)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	if _, err := db.SQL.Exec("ANALYZE hits"); err != nil {
		b.Fatal(err)
	}
}

// sessions creates n sessions, the i-th seen from first(i) to last(i).
func sessions(b *testing.B, db *store.DB, org string, n int, first, last func(int) time.Time) []string {
	b.Helper()
	ctx := ft.System()
	var out []string
	for len(out) < n {
		bulk := make([]*ent.SessionCreate, min(1000, n-len(out)))
		for i := range bulk {
			k := len(out) + i
			bulk[i] = db.Client.Session.Create().SetID(idAt(ids.Session, first(k))).SetOrgID(org).SetSourceIP("198.51.100.7").
				SetFirstSeen(first(k)).SetLastSeen(last(k))
		}
		list, err := db.Client.Session.CreateBulk(bulk...).Save(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range list {
			out = append(out, s.ID)
		}
	}
	return out
}

// BenchmarkPartitionPurge purges FLYTRAP_BENCH_HITS hits (default 1,000,000) spread over
// ten expired days (35 to 44 days ago), next to 30 days of recent hits (1,000 a day) that
// stay, with the default retention (30 days, batches of 500, 20 ms pauses): on a plain hits
// table (batched delete) and on one partitioned by day (ten partitions dropped; the cut's
// own day is not among them). No writer runs. Run it alone, once:
//
//	FLYTRAP_TEST_POSTGRES_URL=… go test -run '^$' -bench PartitionPurge -benchtime 1x -timeout 60m ./retention/
func BenchmarkPartitionPurge(b *testing.B) {
	n := envInt("FLYTRAP_BENCH_HITS", 1_000_000)
	for _, l := range layouts {
		b.Run(l.name, func(b *testing.B) {
			db := benchDB(b, l.opts)
			org, err := db.Client.Organization.Create().SetName("acme").Save(ft.System())
			if err != nil {
				b.Fatal(err)
			}
			at := time.Now().AddDate(0, 0, -45)
			s := sessions(b, db, org.ID, 1, func(int) time.Time { return at }, func(int) time.Time { return time.Now() })[0]
			end := store.Day(time.Now()).AddDate(0, 0, -34)
			span := 10 * retention.Day
			copyHits(b, db, org.ID, n, func(int) string { return s }, func(i int) time.Time {
				return end.Add(-span + time.Duration(float64(span)*float64(i)/float64(n)))
			})
			copyHits(b, db, org.ID, 30_000, func(int) string { return s }, func(i int) time.Time {
				return time.Now().Add(-time.Duration(i) * (30 * retention.Day / 30_000))
			})
			logTo := io.Discard
			if os.Getenv("FLYTRAP_BENCH_LOG") != "" {
				logTo = os.Stderr
			}
			p := retention.New(db.SQL, db.Dialect, retention.DefaultConfig(), slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: slog.LevelDebug})), time.Now)
			if res := timePurge(b, p, func(r retention.Result) int64 { return r.Hits }); res.Hits != int64(n) {
				b.Fatalf("purged %d hits, want %d (%+v)", res.Hits, n, res)
			}
		})
	}
}

// timePurge runs one purge as the benchmark's timed work and reports its time, the rate of
// the rows rows counts, and the partitions dropped.
func timePurge(b *testing.B, p *retention.Purger, rows func(retention.Result) int64) retention.Result {
	b.Helper()
	b.ResetTimer()
	start := time.Now()
	res, err := p.Purge(context.Background())
	took := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(took.Seconds(), "purge-s")
	b.ReportMetric(float64(rows(res))/took.Seconds(), "rows/s")
	b.ReportMetric(float64(res.DroppedPartitions), "partitions-dropped")
	return res
}

// BenchmarkEventPartitionPurge purges FLYTRAP_BENCH_EVENTS events (default 300,000) of ten
// organizations spread over ten expired days (35 to 44 days ago), next to 30 days of recent
// events (1,000 a day) that stay, with the default retention: on a plain events table
// (batched deletes of each log's oldest positions) and on one partitioned by day (ten
// partitions dropped, each after the hole check). Positions, seq and times rise together, as
// event.Append writes them. Run it alone, once:
//
//	FLYTRAP_TEST_POSTGRES_URL=… go test -run '^$' -bench EventPartitionPurge -benchtime 1x -timeout 30m ./retention/
func BenchmarkEventPartitionPurge(b *testing.B) {
	n := envInt("FLYTRAP_BENCH_EVENTS", 300_000)
	const orgs, recent = 10, 30_000
	for _, l := range layouts {
		b.Run(l.name, func(b *testing.B) {
			db := benchDB(b, l.opts)
			var org [orgs]string
			for i := range org {
				o, err := db.Client.Organization.Create().SetName("acme").Save(ft.System())
				if err != nil {
					b.Fatal(err)
				}
				org[i] = o.ID
			}
			end := store.Day(time.Now()).AddDate(0, 0, -34)
			span := 10 * retention.Day
			total := n + recent
			tx, err := db.SQL.Begin()
			if err != nil {
				b.Fatal(err)
			}
			st, err := tx.Prepare(pq.CopyIn("events", "id", "org_id", "position", "seq", "type", "api_version", "created_at", "data"))
			if err != nil {
				b.Fatal(err)
			}
			for i := range total {
				t := end.Add(-span + time.Duration(float64(span)*float64(i)/float64(n)))
				if i >= n {
					t = time.Now().Add(-time.Duration(total-1-i) * (30 * retention.Day / recent))
				}
				if _, err := st.Exec(idAt(ids.Event, t), org[i%orgs], i/orgs+1, i+1, "threat.detected", "2026-11-22", t.UTC(),
					`{"session":{"id":"ses_x","severity":"HIGH"}}`); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := st.Exec(); err != nil {
				b.Fatal(err)
			}
			st.Close()
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
			if _, err := db.SQL.Exec("ANALYZE events"); err != nil {
				b.Fatal(err)
			}
			p := retention.New(db.SQL, db.Dialect, retention.DefaultConfig(), slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)
			if res := timePurge(b, p, func(r retention.Result) int64 { return r.Events }); res.Events != int64(n) {
				b.Fatalf("purged %d events, want %d (%+v)", res.Events, n, res)
			}
			var oldest int64
			if err := db.SQL.QueryRow("SELECT MIN(position) FROM events WHERE org_id = $1", org[0]).Scan(&oldest); err != nil || oldest != int64(n/orgs+1) {
				b.Fatalf("org 0's oldest position %d (%v), want %d", oldest, err, n/orgs+1)
			}
		})
	}
}

// BenchmarkHitLookups measures the reads of hits by something else than their time, on a
// plain table and on one partitioned by day with ~55 partitions (46 days back, a week
// ahead, default): by-id looks up 4 hits by id alone (the writer's fallback for tokens,
// trap/sessions.go sourceHits), by-id-bounded also names the ids' times ± 1 h (what the
// writer asks first); session reads a session's newest 50 hits by session_id alone,
// session-span also names the session's span ± 1 day (what graph/sessiondetail.go asks). FLYTRAP_BENCH_HITS hits (default 300,000) over the last 30
// days, 50 per session within an hour.
//
//	FLYTRAP_TEST_POSTGRES_URL=… go test -run '^$' -bench HitLookups -benchtime 3000x ./retention/
func BenchmarkHitLookups(b *testing.B) {
	n := envInt("FLYTRAP_BENCH_HITS", 300_000)
	const perSession = 50
	for _, l := range layouts {
		b.Run(l.name, func(b *testing.B) {
			db := benchDB(b, l.opts)
			ctx := ft.System()
			org, err := db.Client.Organization.Create().SetName("acme").Save(ctx)
			if err != nil {
				b.Fatal(err)
			}
			starts := make([]time.Time, n/perSession)
			for i := range starts {
				starts[i] = time.Now().Add(-time.Duration(rand.Int64N(int64(30 * retention.Day)))).Truncate(time.Millisecond)
			}
			list := sessions(b, db, org.ID, n/perSession, func(i int) time.Time { return starts[i] },
				func(i int) time.Time { return starts[i].Add((perSession - 1) * time.Minute) })
			copyHits(b, db, org.ID, n, func(i int) string { return list[i/perSession] }, func(i int) time.Time {
				return starts[i/perSession].Add(time.Duration(i%perSession) * time.Minute)
			})
			var idsList []string
			rows, err := db.SQL.Query("SELECT id FROM hits TABLESAMPLE SYSTEM (1) LIMIT 4000")
			if err != nil {
				b.Fatal(err)
			}
			for rows.Next() {
				var id string
				rows.Scan(&id)
				idsList = append(idsList, id)
			}
			rows.Close()
			b.Run("by-id", func(b *testing.B) {
				for i := range b.N {
					want := []string{idsList[i%len(idsList)], idsList[(i+1)%len(idsList)], idsList[(i+2)%len(idsList)], idsList[(i+3)%len(idsList)]}
					got, err := db.Client.Hit.Query().Where(hit.IDIn(want...)).
						Select(hit.FieldID, hit.FieldSessionID, hit.FieldOrgID, hit.FieldReceivedAt, hit.FieldPath).All(ctx)
					if err != nil || len(got) != 4 {
						b.Fatalf("%d hits, %v", len(got), err)
					}
				}
			})
			// What the writer asks first: the ids' times bound received_at (trap/sessions.go).
			b.Run("by-id-bounded", func(b *testing.B) {
				for i := range b.N {
					want := []string{idsList[i%len(idsList)], idsList[(i+1)%len(idsList)], idsList[(i+2)%len(idsList)], idsList[(i+3)%len(idsList)]}
					from, to := time.Time{}, time.Time{}
					for k, id := range want {
						u, _ := ids.Parse(id, ids.Hit)
						t := ulid.Time(u.Time())
						if k == 0 || t.Before(from) {
							from = t
						}
						if k == 0 || t.After(to) {
							to = t
						}
					}
					got, err := db.Client.Hit.Query().Where(hit.ReceivedAtGTE(from.Add(-time.Hour)), hit.ReceivedAtLTE(to.Add(time.Hour)), hit.IDIn(want...)).
						Select(hit.FieldID, hit.FieldSessionID, hit.FieldOrgID, hit.FieldReceivedAt, hit.FieldPath).All(ctx)
					if err != nil || len(got) != 4 {
						b.Fatalf("%d hits, %v", len(got), err)
					}
				}
			})
			b.Run("session", func(b *testing.B) {
				for i := range b.N {
					got, err := db.Client.Hit.Query().Where(hit.SessionID(list[i%len(list)])).
						Order(ent.Desc(hit.FieldReceivedAt), ent.Desc(hit.FieldID)).Limit(51).All(ctx)
					if err != nil || len(got) != perSession {
						b.Fatalf("%d hits, %v", len(got), err)
					}
				}
			})
			// What the session detail asks: the session's span (widened a day) bounds received_at (graph/sessiondetail.go).
			b.Run("session-span", func(b *testing.B) {
				for i := range b.N {
					k := i % len(list)
					got, err := db.Client.Hit.Query().Where(hit.SessionID(list[k]),
						hit.ReceivedAtGTE(starts[k].Add(-retention.Day)), hit.ReceivedAtLTE(starts[k].Add((perSession-1)*time.Minute+retention.Day))).
						Order(ent.Desc(hit.FieldReceivedAt), ent.Desc(hit.FieldID)).Limit(51).All(ctx)
					if err != nil || len(got) != perSession {
						b.Fatalf("%d hits, %v", len(got), err)
					}
				}
			})
			var parts int
			db.SQL.QueryRow("SELECT COUNT(*) FROM pg_inherits WHERE inhparent = to_regclass('hits')").Scan(&parts)
			b.Logf("%s: %d partitions", l.name, parts)
		})
	}
}
