package retention_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/retention"
	"github.com/flytrap/flytrap/store"
)

func openWith(t *testing.T, dsn string, o store.Options) *fixture {
	t.Helper()
	db, err := store.OpenWith(context.Background(), dsn, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{t: t, db: db, ctx: ft.System()}
	f.org = f.newOrg("acme")
	return f
}

// seedDays stores 5 hits a day for the 45 days before now in one live session, and two
// hits outside every partition (2020, and three years ahead).
func (f *fixture) seedDays() {
	f.t.Helper()
	s := f.session(ago(46*day), ago(time.Hour), 0)
	for d := 45; d >= 0; d-- {
		for h := 1; h < 24; h += 5 {
			f.hit(s, ago(time.Duration(d)*day+time.Duration(h)*time.Hour), "")
		}
	}
	f.hit(s, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), "")
	f.hit(s, now.AddDate(3, 0, 0), "")
}

func (f *fixture) hitTimes() []time.Time {
	f.t.Helper()
	rows, err := f.db.SQL.QueryContext(f.ctx, "SELECT received_at FROM hits ORDER BY received_at")
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var at time.Time
		if err := rows.Scan(&at); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, at.UTC())
	}
	return out
}

// On a hits table partitioned by day, the purge drops each partition whose whole day is
// older than the cut and deletes the rest row by row (the cut's own day, the default
// partition): the rows left and the counts equal those of the row-delete path on a plain
// table holding the same hits, and a second purge finds nothing.
func TestPurgeDropsExpiredPartitions(t *testing.T) {
	part := openWith(t, ft.PostgresDSN(t), store.Options{})
	plain := openWith(t, ft.PostgresDSN(t), store.Options{NoPartitions: true})
	// The partitions the service would have made as the days came.
	for d := now.AddDate(0, 0, -46); d.Before(now); d = d.AddDate(0, 0, store.PartitionDays) {
		if _, err := part.db.EnsurePartitions(part.ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	part.seedDays()
	plain.seedDays()
	if part.count("SELECT COUNT(*) FROM hits_default") != 2 { // 2020 and three years ahead
		t.Fatal("the hits outside every partition are not in the default partition")
	}
	expired := plain.count("SELECT COUNT(*) FROM hits WHERE received_at < $1", now.Add(-30*day))
	cfg := small()
	cfg.BatchSize = 7
	results := map[string]retention.Result{}
	for name, f := range map[string]*fixture{"partitioned": part, "plain": plain} {
		res, err := f.purger(cfg).Purge(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		results[name] = res
	}
	// The days before the cut's (2026-10-23 12:00) are whole partitions: 2026-10-07 to 2026-10-22,
	// of hits and of events (these empty).
	if got := results["partitioned"].DroppedPartitions; got != 2*16 {
		t.Errorf("dropped %d partitions, want 16 of hits and 16 of events", got)
	}
	if got := results["plain"].DroppedPartitions; got != 0 {
		t.Errorf("dropped %d partitions of a plain table", got)
	}
	dropped := results["partitioned"]
	dropped.DroppedPartitions = 0
	if want := results["plain"]; dropped != want || want.Hits != int64(expired) {
		t.Errorf("partitioned purge %+v, row-delete purge %+v (want %d hits each)", dropped, want, expired)
	}
	if a, b := part.hitTimes(), plain.hitTimes(); !slices.Equal(a, b) {
		t.Errorf("hits left differ:\npartitioned %v\nplain       %v", a, b)
	}
	for _, at := range part.hitTimes() {
		if at.Before(now.Add(-30 * day)) {
			t.Errorf("a hit of %s is past retention and still stored", at)
		}
	}
	if part.count("SELECT COUNT(*) FROM pg_class WHERE relname = $1", store.PartitionName("hits", time.Date(2026, 10, 22, 0, 0, 0, 0, time.UTC))) != 0 ||
		part.count("SELECT COUNT(*) FROM pg_class WHERE relname = $1", store.PartitionName("hits", time.Date(2026, 10, 23, 0, 0, 0, 0, time.UTC))) != 1 {
		t.Error("the last whole expired day's partition should be gone and the cut's own day's kept")
	}
	if again, err := part.purger(cfg).Purge(context.Background()); err != nil || again.Total() != 0 || again.DroppedPartitions != 0 {
		t.Errorf("a second purge: %+v %v", again, err)
	}
}

// A drop that cannot get its lock in time (a long transaction holds hits) gives up for this
// run without deleting the partition's rows one by one; the next run drops it.
func TestPurgeSkipsABusyPartitionedTable(t *testing.T) {
	f := openWith(t, ft.PostgresDSN(t), store.Options{})
	if _, err := f.db.EnsurePartitions(f.ctx, now.AddDate(0, 0, -40)); err != nil {
		t.Fatal(err)
	}
	s := f.session(ago(41*day), ago(time.Hour), 0)
	f.hit(s, ago(40*day), "")
	f.hit(s, ago(35*day), "")

	busy, err := f.db.SQL.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := busy.Exec("LOCK TABLE hits IN ACCESS SHARE MODE"); err != nil { // what any read of hits holds
		t.Fatal(err)
	}
	res, err := f.purger(small()).Purge(context.Background())
	busy.Rollback()
	// Only the events' partitions of those days (empty, and events is not busy) go.
	if err != nil || res.Hits != 0 || res.DroppedPartitions != store.PartitionDays+1 {
		t.Fatalf("purge while hits is busy: %+v %v; want nothing done to hits and no error", res, err)
	}
	if n := f.count("SELECT COUNT(*) FROM hits"); n != 2 {
		t.Fatalf("%d hits left, want both (nothing deleted row by row)", n)
	}
	res, err = f.purger(small()).Purge(context.Background())
	if err != nil || res.Hits != 2 || res.DroppedPartitions != store.PartitionDays+1 {
		t.Fatalf("purge once hits is free: %+v %v; want the 8 partitions made and 2 hits", res, err)
	}
}

// On events partitioned by day, the purge drops each day's partition older than the cut and
// deletes the cut's own day row by row: what is left equals the row-delete path's on a plain
// table, each organization's log a run of its last positions up to its head.
func TestPurgeDropsExpiredEventPartitions(t *testing.T) {
	part := openWith(t, ft.PostgresDSN(t), store.Options{})
	plain := openWith(t, ft.PostgresDSN(t), store.Options{NoPartitions: true})
	if _, err := part.db.EnsurePartitions(part.ctx, now.AddDate(0, 0, -40)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*fixture{part, plain} {
		other := f.newOrg("other")
		for d := 40; d >= 0; d -= 3 { // days 40, 37, …, 1 before now: expired, the cut's day, kept
			f.events(f.org, 2, ago(time.Duration(d)*day))
			f.events(other, 1, ago(time.Duration(d)*day+time.Hour))
		}
	}
	res := map[*fixture]retention.Result{}
	for _, f := range []*fixture{part, plain} {
		r, err := f.purger(small()).Purge(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		res[f] = r
	}
	// Days 40 to 31 back are expired and partitioned (33 days back on: the 8 days EnsurePartitions made).
	if res[part].DroppedPartitions < 3 || res[plain].DroppedPartitions != 0 {
		t.Errorf("dropped %d partitions (plain %d)", res[part].DroppedPartitions, res[plain].DroppedPartitions)
	}
	if res[part].Events != res[plain].Events || res[part].Events == 0 {
		t.Errorf("events purged: partitioned %d, plain %d", res[part].Events, res[plain].Events)
	}
	left := func(f *fixture) string {
		return fmt.Sprint(f.count("SELECT COUNT(*) FROM events"), f.count("SELECT MIN(position) FROM events WHERE org_id = $1", f.org),
			f.count("SELECT MAX(position) - MIN(position) + 1 FROM events WHERE org_id = $1", f.org))
	}
	if a, b := left(part), left(plain); a != b {
		t.Errorf("events left (count, oldest position, span): partitioned %s, plain %s", a, b)
	}
	if n := part.count("SELECT COUNT(*) FROM events WHERE created_at < $1", now.Add(-30*day)); n != 0 {
		t.Errorf("%d events past retention are stored", n)
	}
}

// An events partition whose drop would leave a hole is not dropped: an instance with a clock
// days behind dated an organization's second event in an expired day while its first, from
// an instance on time, is kept. Dropping that day would delete position 2 and keep 1, and a
// reader after 1 would skip 2 without being told. The purge deletes row by row instead, a
// run of first positions only, so both stay.
func TestPurgeKeepsAnEventPartitionThatWouldLeaveAHole(t *testing.T) {
	f := openWith(t, ft.PostgresDSN(t), store.Options{})
	if _, err := f.db.EnsurePartitions(f.ctx, now.AddDate(0, 0, -40)); err != nil {
		t.Fatal(err)
	}
	f.events(f.org, 1, ago(time.Hour))
	f.events(f.org, 1, ago(36*day)) // written before event times were kept in order
	res, err := f.purger(small()).Purge(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Events != 0 {
		t.Errorf("%d events purged, want none: position 1 is not expired", res.Events)
	}
	if n := f.count("SELECT COUNT(*) FROM events"); n != 2 {
		t.Fatalf("%d events left, want both", n)
	}
	if f.count("SELECT COUNT(*) FROM pg_class WHERE relname = $1", store.PartitionName("events", store.Day(ago(36*day)))) != 1 {
		t.Error("the partition holding position 2 was dropped")
	}
	// Once position 1 expires too, both go, row by row, and the partition with them.
	later := f.purgerAt(small(), now.Add(31*day))
	if res, err := later.Purge(context.Background()); err != nil || res.Events != 2 {
		t.Fatalf("purge 31 days on: %+v %v", res, err)
	}
}
