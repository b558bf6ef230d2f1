package retention_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	"github.com/oklog/ulid/v2"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/event"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/record"
	"github.com/flytrap/flytrap/retention"
	"github.com/flytrap/flytrap/store"
	"github.com/flytrap/flytrap/tally"
)

func TestMain(m *testing.M) { ft.Main(m) }

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) time.Time { return now.Add(-d) }

const day = retention.Day

// idAt is an id of prefix made at t, as ids.New would have made it then.
func idAt(prefix string, t time.Time) string {
	u := ulid.MustNew(ulid.Timestamp(t), ulid.DefaultEntropy())
	return ids.Format(prefix, u)
}

type fixture struct {
	t   *testing.T
	db  *store.DB
	ctx context.Context
	org string
}

func open(t *testing.T, b ft.Backend) *fixture {
	t.Helper()
	db, err := store.Open(context.Background(), b.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{t: t, db: db, ctx: ft.System()}
	f.org = f.newOrg("acme")
	return f
}

func (f *fixture) newOrg(name string) string {
	o, err := f.db.Client.Organization.Create().SetName(name).Save(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return o.ID
}

func (f *fixture) session(first, last time.Time, hits int) string {
	f.t.Helper()
	s, err := record.CreateSessions(f.ctx, f.db.Client, f.db.Client.Session.Create().SetID(idAt(ids.Session, first)).SetOrgID(f.org).
		SetSourceIP("203.0.113.9").SetFirstSeen(first).SetLastSeen(last).SetHitCount(hits).SetSeverity("high").SetClassification("AI_AGENT"))
	if err != nil {
		f.t.Fatal(err)
	}
	return s[0].ID
}

func (f *fixture) hit(session string, at time.Time, body string) string {
	f.t.Helper()
	h, err := record.CreateHits(f.ctx, f.db.Client, f.db.Client.Hit.Create().SetID(idAt(ids.Hit, at)).SetOrgID(f.org).
		SetSessionID(session).SetMethod("GET").SetPath("/x").SetHeaders(map[string][]string{}).SetSourceIP("203.0.113.9").
		SetReceivedAt(at).SetBody(body))
	if err != nil {
		f.t.Fatal(err)
	}
	return h[0].ID
}

func (f *fixture) signal(session string, at time.Time) string {
	f.t.Helper()
	s, err := f.db.Client.Signal.Create().SetID(idAt(ids.Signal, at)).SetOrgID(f.org).SetSessionID(session).
		SetHitID("hit_x").SetName("CALLBACK_HIT").SetCreatedAt(at).Save(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return s.ID
}

func (f *fixture) prompt(session string, at time.Time) string {
	f.t.Helper()
	p, err := record.CreatePrompts(f.ctx, f.db.Client, f.db.Client.Prompt.Create().SetID(idAt(ids.Prompt, at)).SetOrgID(f.org).
		SetSessionID(session).SetHitID("hit_x").SetText("You are a helpful agent").SetHash("h").SetCreatedAt(at))
	if err != nil {
		f.t.Fatal(err)
	}
	return p[0].ID
}

// events appends n events for org and dates them at.
func (f *fixture) events(org string, n int, at time.Time) []int64 {
	f.t.Helper()
	var pos []int64
	for range n {
		tx, err := f.db.Client.Tx(f.ctx)
		if err != nil {
			f.t.Fatal(err)
		}
		ev, err := event.Append(f.ctx, tx, org, event.TrapCreated, map[string]any{"n": 1})
		if err != nil {
			f.t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			f.t.Fatal(err)
		}
		f.exec("UPDATE events SET created_at = ? WHERE id = ?", at, ev.ID)
		pos = append(pos, ev.Position)
	}
	return pos
}

func (f *fixture) delivery(endpoint string, at time.Time, status string) string {
	f.t.Helper()
	id := idAt(ids.Delivery, at)
	f.exec(`INSERT INTO webhook_deliveries (id, org_id, endpoint_id, message_id, event_type, session_id, payload, status,
		attempt_count, next_attempt_at, last_error, attempts, created_at) VALUES (?, ?, ?, 'm', 'trap.created', '', '{}', ?, 0, ?, '', '[]', ?)`,
		id, f.org, endpoint, status, at, at)
	return id
}

func (f *fixture) rebind(q string) string {
	if f.db.Dialect != dialect.Postgres {
		return q
	}
	n := 0
	return replaceEach(q, "?", func() string { n++; return fmt.Sprintf("$%d", n) })
}

func replaceEach(s, old string, next func() string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, old)
		if i < 0 {
			return b.String() + s
		}
		b.WriteString(s[:i] + next())
		s = s[i+len(old):]
	}
}

func (f *fixture) exec(q string, args ...any) {
	f.t.Helper()
	if _, err := f.db.SQL.ExecContext(f.ctx, f.rebind(q), args...); err != nil {
		f.t.Fatalf("%s: %v", q, err)
	}
}

func (f *fixture) count(q string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.db.SQL.QueryRowContext(f.ctx, f.rebind(q), args...).Scan(&n); err != nil {
		f.t.Fatalf("%s: %v", q, err)
	}
	return n
}

func (f *fixture) exists(table, id string) bool {
	return f.count("SELECT COUNT(*) FROM "+table+" WHERE id = ?", id) == 1
}

func (f *fixture) purger(cfg retention.Config) *retention.Purger { return f.purgerAt(cfg, now) }

func (f *fixture) purgerAt(cfg retention.Config, at time.Time) *retention.Purger {
	return retention.New(f.db.SQL, f.db.Dialect, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), func() time.Time { return at })
}

func small() retention.Config {
	cfg := retention.DefaultConfig()
	cfg.BatchSize, cfg.Pause = 2, 0 // several batches for every table
	return cfg
}

// TestPurgeDeletesExpiredRowsOnly: with the default periods (hits, events and deliveries
// 30 days, sessions, signals and prompts 90), what is older goes, what is newer stays,
// sessions keep their summaries, and nothing is left pointing at a deleted session.
func TestPurgeDeletesExpiredRowsOnly(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		f := open(t, b)
		ctx := f.ctx

		// A session over for 100 days: it goes with all it holds.
		old := f.session(ago(101*day), ago(100*day), 3)
		oldHits := []string{f.hit(old, ago(101*day), ""), f.hit(old, ago(100*day-time.Second), ""), f.hit(old, ago(100*day), "")}
		oldSig, oldPrm := f.signal(old, ago(100*day)), f.prompt(old, ago(100*day))
		// A visitor first seen 100 days ago and seen again an hour ago: it stays, its
		// hits older than 30 days and signals older than 90 go, the rest stays.
		live := f.session(ago(100*day), ago(time.Hour), 5)
		liveOld := []string{f.hit(live, ago(100*day), ""), f.hit(live, ago(40*day), ""), f.hit(live, ago(31*day), "")}
		liveNew := []string{f.hit(live, ago(29*day), ""), f.hit(live, ago(time.Hour), "")}
		liveOldSig, liveNewSig := f.signal(live, ago(95*day)), f.signal(live, ago(1*day))
		livePrm := f.prompt(live, ago(60*day))
		// A session within everything's period.
		recent := f.session(ago(10*day), ago(9*day), 1)
		recentHit := f.hit(recent, ago(10*day), "")

		// Events: three from 40 days ago, two from yesterday; another organization's too.
		other := f.newOrg("other")
		f.events(f.org, 3, ago(40*day))
		f.events(other, 2, ago(40*day))
		kept := f.events(f.org, 2, ago(day))
		f.events(other, 1, ago(day))

		ep, err := f.db.Client.WebhookEndpoint.Create().SetOrgID(f.org).SetURL("https://example.com/hook").SetSecret("s").Save(ctx)
		if err != nil {
			t.Fatal(err)
		}
		oldDone := f.delivery(ep.ID, ago(31*day), "SUCCEEDED")
		oldFailed := f.delivery(ep.ID, ago(45*day), "FAILED")
		oldPending := f.delivery(ep.ID, ago(31*day), "PENDING")
		newDone := f.delivery(ep.ID, ago(2*day), "SUCCEEDED")

		p := f.purger(small())
		res, err := p.Purge(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := retention.Result{Hits: 6, Signals: 2, Prompts: 1, Events: 5, Deliveries: 2, Sessions: 1}
		got := res
		got.FreedPages = 0
		if got != want {
			t.Errorf("purge deleted %+v, want %+v", got, want)
		}

		for table, gone := range map[string][]string{
			"sessions": {old}, "hits": append(oldHits, liveOld...), "signals": {oldSig, liveOldSig},
			"prompts": {oldPrm}, "webhook_deliveries": {oldDone, oldFailed},
		} {
			for _, id := range gone {
				if f.exists(table, id) {
					t.Errorf("%s %s is past retention and still stored", table, id)
				}
			}
		}
		for table, stay := range map[string][]string{
			"sessions": {live, recent}, "hits": append(liveNew, recentHit), "signals": {liveNewSig},
			"prompts": {livePrm}, "webhook_deliveries": {oldPending, newDone},
		} {
			for _, id := range stay {
				if !f.exists(table, id) {
					t.Errorf("%s %s is within retention (or pending) and was deleted", table, id)
				}
			}
		}
		// The log loses its oldest positions only, per organization.
		if n := f.count("SELECT COUNT(*) FROM events WHERE org_id = ?", f.org); n != len(kept) {
			t.Errorf("%d events left, want %d", n, len(kept))
		}
		if n := f.count("SELECT MIN(position) FROM events WHERE org_id = ?", f.org); int64(n) != kept[0] {
			t.Errorf("oldest position left %d, want %d", n, kept[0])
		}
		if n := f.count("SELECT COUNT(*) FROM events WHERE org_id = ?", other); n != 1 {
			t.Errorf("other organization: %d events left, want 1", n)
		}
		// Summaries are what was seen, not what is stored: unchanged.
		s, err := f.db.Client.Session.Get(ctx, live)
		if err != nil {
			t.Fatal(err)
		}
		if s.HitCount != 5 || !s.LastSeen.Equal(ago(time.Hour)) {
			t.Errorf("live session's summary changed: hits %d, last seen %s", s.HitCount, s.LastSeen)
		}
		for _, table := range []string{"hits", "signals", "prompts"} {
			if n := f.count("SELECT COUNT(*) FROM " + table + " WHERE session_id NOT IN (SELECT id FROM sessions)"); n != 0 {
				t.Errorf("%d %s point at a deleted session", n, table)
			}
		}

		// Nothing more is due: a second run deletes nothing.
		again, err := p.Purge(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if again.Total() != 0 {
			t.Errorf("second purge deleted %+v", again)
		}
	})
}

// TestPurgeKeepsForeverAtZero: 0 keeps a kind of row forever.
func TestPurgeKeepsForeverAtZero(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		f := open(t, b)
		s := f.session(ago(400*day), ago(400*day), 1)
		h := f.hit(s, ago(400*day), "")
		f.events(f.org, 2, ago(400*day))
		cfg := small()
		cfg.Hits, cfg.Signals, cfg.Prompts, cfg.Events, cfg.Deliveries, cfg.Sessions, cfg.HitHours = 0, 0, 0, 0, 0, 0, 0
		res, err := f.purger(cfg).Purge(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Total() != 0 || !f.exists("sessions", s) || !f.exists("hits", h) {
			t.Fatalf("retention 0 deleted rows: %+v", res)
		}
	})
}

// TestPurgeLargeBacklogInBatches: many expired rows go in batches of the configured
// size, and on SQLite the freed pages go back to the file system.
func TestPurgeLargeBacklogInBatches(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		f := open(t, b)
		s := f.session(ago(10*day), ago(time.Hour), 0)
		body := strings.Repeat("x", 4000)
		const n = 1200
		bulk := make([]*ent.HitCreate, 0, n)
		for i := range n {
			at := ago(40*day + time.Duration(i)*time.Second)
			bulk = append(bulk, f.db.Client.Hit.Create().SetID(idAt(ids.Hit, at)).SetOrgID(f.org).SetSessionID(s).SetMethod("GET").
				SetPath("/x").SetHeaders(map[string][]string{}).SetSourceIP("203.0.113.9").SetReceivedAt(at).SetBody(body))
		}
		for i := 0; i < n; i += 200 {
			if err := f.db.Client.Hit.CreateBulk(bulk[i : i+200]...).Exec(f.ctx); err != nil {
				t.Fatal(err)
			}
		}
		keep := f.hit(s, ago(time.Hour), "")
		pages := func() int { return f.count("PRAGMA page_count") }
		var before int
		if b.Name == "sqlite" {
			if mode := f.count("PRAGMA auto_vacuum"); mode != 2 {
				t.Fatalf("a new SQLite database has auto_vacuum %d, want 2 (INCREMENTAL)", mode)
			}
			before = pages()
		}
		cfg := retention.DefaultConfig()
		cfg.BatchSize, cfg.Pause = 100, 0
		res, err := f.purger(cfg).Purge(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Hits != n || !f.exists("hits", keep) || f.count("SELECT COUNT(*) FROM hits") != 1 {
			t.Fatalf("deleted %d hits, want %d, and the new one kept", res.Hits, n)
		}
		if b.Name == "sqlite" {
			after := pages()
			// 1,200 bodies of 4 kB are ~1,200 pages of 4 kB: most must be handed back.
			if res.FreedPages < n/2 || after > before-n/2 {
				t.Errorf("incremental vacuum freed %d pages; page_count %d → %d", res.FreedPages, before, after)
			}
			if free := f.count("PRAGMA freelist_count"); free != 0 {
				t.Errorf("%d free pages left after the purge", free)
			}
		}
	})
}

// TestOnePurgerAtATime: on PostgreSQL an instance whose peer holds the purge lock does nothing.
func TestOnePurgerAtATime(t *testing.T) {
	dsn := ft.PostgresDSN(t)
	db, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	f := &fixture{t: t, db: db, ctx: ft.System()}
	f.org = f.newOrg("acme")
	s := f.session(ago(100*day), ago(100*day), 1)
	f.hit(s, ago(100*day), "")

	peer, err := sql.Open("postgres", db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	conn, err := peer.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "SELECT pg_advisory_lock($1)", int64(0x466c797472617002)); err != nil {
		t.Fatal(err)
	}
	res, err := f.purger(small()).Purge(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Skipped || res.Total() != 0 || !f.exists("sessions", s) {
		t.Fatalf("purged while another instance held the lock: %+v", res)
	}
	if _, err := conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock($1)", int64(0x466c797472617002)); err != nil {
		t.Fatal(err)
	}
	res, err = f.purger(small()).Purge(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped || res.Sessions != 1 {
		t.Fatalf("once the lock is free the purge runs: %+v", res)
	}
}

// TestPurgeTakesSessionsOutOfCounters: the purge takes each deleted session out of the
// counters of stored sessions, in the deleting transaction; when that fails, nothing of
// that batch is deleted and the counters are as they were.
func TestPurgeTakesSessionsOutOfCounters(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		f := open(t, b)
		s := f.session(ago(100*day), ago(100*day), 0)
		f.session(ago(time.Hour), ago(time.Hour), 0) // kept
		p := f.purger(small())
		f.exec("ALTER TABLE counters RENAME TO counters_away")
		if _, err := p.Purge(context.Background()); err == nil || !f.exists("sessions", s) {
			t.Fatalf("a purge whose counters fail must keep the sessions: err %v", err)
		}
		f.exec("ALTER TABLE counters_away RENAME TO counters")
		f.sessionCountersAsRecounted()
		if _, err := p.Purge(context.Background()); err != nil {
			t.Fatal(err)
		}
		if f.exists("sessions", s) {
			t.Fatal("the expired session was kept")
		}
		f.sessionCountersAsRecounted()
	})
}

// sessionCountersAsRecounted fails the test unless the stored session counters equal a
// recount of the stored sessions.
func (f *fixture) sessionCountersAsRecounted() {
	f.t.Helper()
	stored, err := tally.Stored(f.ctx, f.db.Client)
	if err != nil {
		f.t.Fatal(err)
	}
	recount, err := tally.Recount(f.ctx, f.db.Client)
	if err != nil {
		f.t.Fatal(err)
	}
	if !stored.SessionsEqual(recount) {
		f.t.Fatalf("session counters vs a recount:\n%s", stored.Diff(recount))
	}
}

func TestParseDays(t *testing.T) {
	for in, want := range map[string]time.Duration{"30d": 30 * day, "0": 0, "12h": 12 * time.Hour, "1d": day} {
		if got, err := retention.ParseDays(in); err != nil || got != want {
			t.Errorf("ParseDays(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1d", "xd", "30", "1.5d", "-5h"} {
		if _, err := retention.ParseDays(bad); err == nil {
			t.Errorf("ParseDays(%q) accepted", bad)
		}
	}
	cfg := retention.DefaultConfig()
	cfg.Hits = time.Minute
	if cfg.Validate() == nil {
		t.Error("a retention of a minute is accepted")
	}
}

// TestNeverDeletesASessionBeingWritten: a session past retention that the writer is adding a
// hit to (its transaction open, last_seen moved) is not deleted by a purge running meanwhile,
// and neither is the hit.
func TestNeverDeletesASessionBeingWritten(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		f := open(t, b)
		s := f.session(ago(100*day), ago(100*day), 1)
		ctx := context.Background()
		tx, err := f.db.SQL.BeginTx(ctx, nil) // SQLite: BEGIN IMMEDIATE, the write lock
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		hitID := idAt(ids.Hit, now)
		for _, q := range []string{"UPDATE sessions SET last_seen = ? WHERE id = ?",
			`INSERT INTO hits (id, org_id, session_id, method, path, query, headers, body, body_truncated, source_ip, user_agent,
				received_at, kind, status, signals) VALUES (?, ?, ?, 'GET', '/x', '', '{}', '', false, '203.0.113.9', '', ?, 'decoy', 200, '[]')`} {
			args := []any{now, s}
			if strings.Contains(q, "INSERT") {
				args = []any{hitID, f.org, s, now}
			}
			if _, err := tx.ExecContext(ctx, f.rebind(q), args...); err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan error, 1)
		var res retention.Result
		go func() {
			var err error
			res, err = f.purger(small()).Purge(ctx)
			done <- err
		}()
		// Let the purge reach the writer's lock before the writer commits.
		if b.Name == "postgres" {
			deadline := time.Now().Add(10 * time.Second)
			for f.count("SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'") == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the purge never waited for the writer's lock")
				}
				time.Sleep(10 * time.Millisecond)
			}
		} else {
			time.Sleep(300 * time.Millisecond)
		}
		select {
		case err := <-done:
			t.Fatalf("the purge finished while the writer held its transaction open: %v %+v", err, res)
		default:
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if res.Sessions != 0 || !f.exists("sessions", s) || !f.exists("hits", hitID) {
			t.Fatalf("a session being written to was deleted: %+v", res)
		}
	})
}

// A purged session's trap_sessions rows go with it; a kept session keeps its own, and the
// table then agrees with the stored sessions' traps_triggered.
func TestPurgeDeletesTrapSessions(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		f := open(t, b)
		c := f.db.Client
		old := f.session(ago(200*day), ago(200*day), 1)
		live := f.session(ago(2*day), ago(time.Hour), 1)
		f.hit(live, ago(time.Hour), "")
		for _, s := range []string{old, live} {
			// The change through record adds their trap_sessions rows.
			if err := record.UpdateSession(f.ctx, c.Session.UpdateOneID(s).SetTrapsTriggered([]string{"trp_a", "trp_b"})); err != nil {
				t.Fatal(err)
			}
		}
		if n := c.TrapSession.Query().CountX(f.ctx); n != 4 {
			t.Fatalf("%d trap_sessions rows before the purge, want 4", n)
		}
		res, err := f.purger(small()).Purge(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Sessions != 1 || f.exists("sessions", old) || !f.exists("sessions", live) {
			t.Fatalf("purge %+v: want the old session deleted and the live one kept", res)
		}
		if err := store.CheckTrapSessions(f.ctx, c); err != nil {
			t.Fatal(err)
		}
		if n := c.TrapSession.Query().CountX(f.ctx); n != 2 {
			t.Fatalf("%d trap_sessions rows, want the live session's 2", n)
		}
	})
}

// The hourly hit counters go once their hour ended --retain-hit-hours ago, every
// organization's and trap's, and only those; 0 keeps them forever.
func TestPurgeHitHours(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		f := open(t, b)
		other := f.newOrg("other")
		var d tally.Delta
		hours := map[string]time.Time{"old": ago(500 * day), "just past": ago(400*day + time.Hour), "kept": ago(399 * day), "today": ago(time.Hour)}
		for _, at := range hours {
			d.Hit(f.org, "trp_a", at.Unix()/3600)
			d.Hit(other, "", at.Unix()/3600)
		}
		if err := tally.Apply(f.ctx, f.db.Client, &d); err != nil {
			t.Fatal(err)
		}
		count := func() int { return f.db.Client.HitHour.Query().CountX(f.ctx) }
		if n := count(); n != 12 { // per hour: acme's all-traps and trap buckets, other's all-traps one
			t.Fatalf("%d buckets stored, want 12", n)
		}
		cfg := small()
		cfg.HitHours = 0
		if res, err := f.purger(cfg).Purge(context.Background()); err != nil || res.HitHours != 0 || count() != 12 {
			t.Fatalf("retain-hit-hours 0 deleted %d buckets (%v)", res.HitHours, err)
		}
		cfg.HitHours, cfg.BatchSize = 400*day, 2 // batches of two: the loop runs
		res, err := f.purger(cfg).Purge(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.HitHours != 6 || count() != 6 {
			t.Fatalf("purge deleted %d buckets, %d left; want 6 and 6", res.HitHours, count())
		}
		for _, h := range f.db.Client.HitHour.Query().AllX(f.ctx) {
			if h.Hour < ago(400*day).Unix()/3600 {
				t.Fatalf("bucket of hour %d kept", h.Hour)
			}
		}
	})
}

// A campaign goes once its last prompt is past --retain-prompts and none of its sessions is
// stored; one with a stored session, or a recent prompt, stays; --retain-prompts 0 keeps all.
func TestPurgeCampaigns(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		f := open(t, b)
		c := f.db.Client
		other := f.newOrg("other")
		live := f.session(ago(2*day), ago(time.Hour), 1)
		f.hit(live, ago(time.Hour), "")
		mk := func(org, id string, last time.Time, member string) {
			t.Helper()
			pid := idAt(ids.Prompt, last)
			c.Campaign.Create().SetID(id).SetOrgID(org).SetPromptHash(id).SetSessionCount(1).SetPromptCount(1).
				SetFirstPromptID(pid).SetLastPromptID(pid).SetFirstSeen(last).SetLastSeen(last).SaveX(f.ctx)
			if member != "" {
				c.CampaignSession.Create().SetOrgID(org).SetCampaignID(id).SetSessionID(member).SetSourceIP("203.0.113.9").
					SetPrompts(1).SetLastPromptID(pid).SaveX(f.ctx)
			}
		}
		mk(f.org, "cmp_old_alone", ago(200*day), "")
		mk(f.org, "cmp_old_member", ago(200*day), live)
		mk(f.org, "cmp_recent", ago(10*day), "")
		mk(other, "cmp_other_old", ago(300*day), "")
		cfg := small()
		cfg.Prompts = 0
		if res, err := f.purger(cfg).Purge(context.Background()); err != nil || res.Campaigns != 0 {
			t.Fatalf("retain-prompts 0 deleted %d campaigns (%v)", res.Campaigns, err)
		}
		res, err := f.purger(small()).Purge(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		left := c.Campaign.Query().IDsX(f.ctx)
		slices.Sort(left)
		if res.Campaigns != 2 || !slices.Equal(left, []string{"cmp_old_member", "cmp_recent"}) {
			t.Fatalf("purge deleted %d campaigns, left %v; want 2, [cmp_old_member cmp_recent]", res.Campaigns, left)
		}
	})
}

// TestPurgeIdempotencyKeys: Idempotency-Keys are kept 24 hours (app.IdempotencyWindow);
// without this an organization's expired keys stayed until its next keyed create, and
// one that never made another kept its rows (each up to 64 KiB of answer) forever.
func TestPurgeIdempotencyKeys(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		f := open(t, b)
		other := f.newOrg("other")
		add := func(org, key string, at time.Time) {
			f.db.Client.IdempotencyKey.Create().SetOrgID(org).SetKey(key).SetRequestHash("h").SetResponse([]byte("{}")).
				SetStatus(201).SetCreatedAt(at).ExecX(f.ctx)
		}
		for i, at := range []time.Time{ago(25 * time.Hour), ago(3 * day), ago(400 * day)} {
			add(f.org, fmt.Sprint("old", i), at)
			add(other, fmt.Sprint("old", i), at)
		}
		add(f.org, "fresh", ago(23*time.Hour))
		add(other, "fresh", ago(time.Minute))
		res, err := f.purger(small()).Purge(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		left := f.db.Client.IdempotencyKey.Query().AllX(f.ctx)
		if res.IdempotencyKeys != 6 || len(left) != 2 || left[0].Key != "fresh" || left[1].Key != "fresh" {
			t.Fatalf("purge deleted %d keys and left %d; want 6 deleted and the two fresh ones left", res.IdempotencyKeys, len(left))
		}
	})
}
