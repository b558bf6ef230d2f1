package store_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/store"
)

// schemaOf describes what a migration could change: tables and partitions with their
// bounds, columns, indexes and constraints.
func schemaOf(t *testing.T, raw *sql.DB) string {
	t.Helper()
	rows, err := raw.Query(`
		SELECT 'rel ' || c.relname || ' ' || c.relkind::text || ' ' || COALESCE(pg_get_expr(c.relpartbound, c.oid), '')
		  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
		UNION ALL SELECT 'col ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || COALESCE(column_default, '')
		  FROM information_schema.columns WHERE table_schema = 'public'
		UNION ALL SELECT 'idx ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
		UNION ALL SELECT 'con ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid)
		  FROM pg_constraint WHERE connamespace = 'public'::regnamespace
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		b.WriteString(s + "\n")
	}
	return b.String()
}

// checkPartitionedBy fails t unless table is range-partitioned by column alone, with the
// primary key (id, column).
func checkPartitionedBy(t *testing.T, raw *sql.DB, table, column string) {
	t.Helper()
	var key, pk string
	if err := raw.QueryRow(`SELECT pg_get_partkeydef($1::regclass)`, table).Scan(&key); err != nil || key != "RANGE ("+column+")" {
		t.Fatalf("%s is not range-partitioned by %s: %q %v", table, column, key, err)
	}
	raw.QueryRow(`SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'p'`, table).Scan(&pk)
	if pk != "PRIMARY KEY (id, "+column+")" {
		t.Fatalf("primary key of %s %q", table, pk)
	}
}

func names(list []store.Partition) []string {
	var out []string
	for _, p := range list {
		out = append(out, p.Name)
	}
	return out
}

// A new PostgreSQL database gets hits range-partitioned by day: a default partition, today
// and PartitionDays days ahead, ent's columns, indexes and foreign keys on the partitioned
// table; a second start changes nothing.
func TestNewDatabaseHasPartitionedHits(t *testing.T) {
	dsn := ft.PostgresDSN(t)
	ctx := context.Background()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	raw := db.SQL
	checkPartitionedBy(t, raw, "hits", "received_at")
	list, ok, err := store.Partitions(ctx, raw, "hits", "received_at")
	if err != nil || !ok {
		t.Fatalf("partitions: %v %v", ok, err)
	}
	today := store.Day(time.Now())
	var want []string
	for i := range store.PartitionDays + 1 {
		want = append(want, store.PartitionName("hits", today.AddDate(0, 0, i)))
	}
	want = append(want, "hits_default")
	if got := names(list); !slices.Equal(got, want) {
		// A run that crossed midnight UTC between Open and now sees one day more: not a failure of the code.
		if time.Now().UTC().Day() == today.Day() {
			t.Fatalf("partitions %v, want %v", got, want)
		}
	}
	for _, p := range list[:len(list)-1] {
		if !p.To.Equal(p.From.AddDate(0, 0, 1)) || p.From.Hour() != 0 {
			t.Fatalf("partition %s is not one UTC day: %s–%s", p.Name, p.From, p.To)
		}
	}
	var indexes, fks int
	raw.QueryRow(`SELECT COUNT(*) FROM pg_indexes WHERE tablename = 'hits' AND indexname LIKE 'hit\_%'`).Scan(&indexes)
	raw.QueryRow(`SELECT COUNT(*) FROM pg_constraint WHERE conrelid = 'hits'::regclass AND contype = 'f'`).Scan(&fks)
	if indexes != 3 || fks != 2 {
		t.Fatalf("ent's indexes (%d, want 3) or foreign keys (%d, want 2) are missing on the partitioned table", indexes, fks)
	}
	// Every partition has the indexes too (PostgreSQL makes them from the parent's).
	raw.QueryRow(`SELECT COUNT(*) FROM pg_indexes WHERE tablename = $1`, list[0].Name).Scan(&indexes)
	if indexes != 4 {
		t.Fatalf("partition %s has %d indexes, want 4 (primary key and ent's three)", list[0].Name, indexes)
	}

	before := schemaOf(t, raw)
	again, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("second start: %v", err)
	}
	again.Close()
	if after := schemaOf(t, raw); after != before && time.Now().UTC().Day() == today.Day() {
		t.Fatalf("a second start changed the schema:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// A new PostgreSQL database gets events range-partitioned by day too. Its unique indexes
// carry the partition key, as PostgreSQL requires; the counters keep the numbers unique.
func TestNewDatabaseHasPartitionedEvents(t *testing.T) {
	dsn := ft.PostgresDSN(t)
	ctx := context.Background()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	raw := db.SQL
	checkPartitionedBy(t, raw, "events", "created_at")
	rows, err := raw.Query(`SELECT indexdef FROM pg_indexes WHERE tablename = 'events' AND indexdef LIKE 'CREATE UNIQUE%' AND indexname <> 'events_pkey' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var unique []string
	for rows.Next() {
		var def string
		rows.Scan(&def)
		unique = append(unique, def[strings.Index(def, "("):])
	}
	rows.Close()
	if want := []string{"(org_id, \"position\", created_at)", "(seq, created_at)"}; !slices.Equal(unique, want) {
		t.Fatalf("unique indexes of events %q, want %q", unique, want)
	}
	list, ok, err := store.Partitions(ctx, raw, "events", "created_at")
	if err != nil || !ok || len(list) != store.PartitionDays+2 {
		t.Fatalf("partitions of events: %v %v %v", names(list), ok, err)
	}
	var fks int
	raw.QueryRow(`SELECT COUNT(*) FROM pg_constraint WHERE conrelid = 'events'::regclass AND contype = 'f'`).Scan(&fks)
	if fks != 1 {
		t.Fatalf("events has %d foreign keys, want its organization's", fks)
	}
	before, day := schemaOf(t, raw), store.Day(time.Now())
	again, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("second start: %v", err)
	}
	again.Close()
	// A run that crossed midnight UTC gets the next week's last partition: not a change of the code's.
	if after := schemaOf(t, raw); after != before && store.Day(time.Now()).Equal(day) {
		t.Fatalf("a second start changed the schema:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// With NoPartitions a new database gets a plain hits table, and the manager leaves it alone.
func TestNoPartitionsKeepsHitsPlain(t *testing.T) {
	dsn := ft.PostgresDSN(t)
	ctx := context.Background()
	db, err := store.OpenWith(ctx, dsn, store.Options{NoPartitions: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var kind string
	db.SQL.QueryRow(`SELECT relkind FROM pg_class WHERE oid = 'hits'::regclass`).Scan(&kind)
	if kind != "r" {
		t.Fatalf("hits relkind %q, want a plain table", kind)
	}
	made, err := db.EnsurePartitions(ctx, time.Now())
	if err != nil || len(made) != 0 {
		t.Fatalf("the manager made %v (%v) on a plain table", made, err)
	}
	// With events converted and hits left plain, the days ahead are made for events.
	if _, err := db.Partition(ctx, "events", time.Now(), 3*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	later := time.Now().AddDate(0, 0, 10)
	made, err = db.EnsurePartitions(ctx, later)
	if err != nil || len(made) != store.PartitionDays+1 || !strings.HasPrefix(made[0], "events_p") {
		t.Fatalf("with plain hits and partitioned events the manager made %v (%v), want events' next %d days", made, err, store.PartitionDays+1)
	}
	// And a later start with partitions on keeps the plain table (converting is an operator's step).
	again, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
	db.SQL.QueryRow(`SELECT relkind FROM pg_class WHERE oid = 'hits'::regclass`).Scan(&kind)
	if kind != "r" {
		t.Fatalf("a later start turned hits into %q", kind)
	}
}

// Two instances creating partitions together make each day's once; a second run makes
// none; hits outside every partition land in the default one and are never lost, and a
// partition later made over their day takes them in.
func TestPartitionManager(t *testing.T) {
	dsn := ft.PostgresDSN(t)
	ctx := context.Background()
	a, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sys := ft.System()
	org := a.Client.Organization.Create().SetName("acme").SaveX(sys)
	ses := a.Client.Session.Create().SetOrgID(org.ID).SetSourceIP("203.0.113.9").SaveX(sys)
	now := time.Now().UTC()
	in20 := store.Day(now).AddDate(0, 0, 20).Add(13 * time.Hour)
	dates := []time.Time{time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), in20, now.AddDate(10, 0, 0), now}
	var hitIDs []string
	for _, at := range dates {
		h := a.Client.Hit.Create().SetID(ids.New(ids.Hit)).SetOrgID(org.ID).SetSessionID(ses.ID).SetMethod("GET").SetPath("/").
			SetHeaders(map[string][]string{}).SetSourceIP("203.0.113.9").SetReceivedAt(at).SaveX(sys)
		hitIDs = append(hitIDs, h.ID)
	}
	count := func(table string) (n int) {
		t.Helper()
		if err := a.SQL.QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count("hits_default"); n != 3 {
		t.Fatalf("%d hits in the default partition, want the 3 outside every partition", n)
	}
	if n := count(store.PartitionName("hits", store.Day(now))); n != 1 {
		t.Fatalf("today's hit is not in today's partition (%d)", n)
	}

	// Fifteen days on, both instances run the manager at once.
	later := now.AddDate(0, 0, 15)
	var wg sync.WaitGroup
	made := make([][]string, 2)
	errs := make([]error, 2)
	for i, db := range []*store.DB{a, b} {
		wg.Go(func() { made[i], errs[i] = db.EnsurePartitions(ctx, later) })
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("manager errors: %v, %v", errs[0], errs[1])
	}
	all := append(append([]string{}, made[0]...), made[1]...)
	slices.Sort(all)
	var want []string
	// The days from later's to PartitionDays after it: the days between now's window and
	// later's are past by then, and their hits would go to the default partition.
	for _, table := range []string{"events", "hits"} {
		for d := store.Day(later); !d.After(store.Day(later).AddDate(0, 0, store.PartitionDays)); d = d.AddDate(0, 0, 1) {
			want = append(want, store.PartitionName(table, d))
		}
	}
	if !slices.Equal(all, want) {
		t.Fatalf("the two instances made %v and %v, want %v once", made[0], made[1], want)
	}
	if again, err := a.EnsurePartitions(ctx, later); err != nil || len(again) != 0 {
		t.Fatalf("a second run made %v (%v)", again, err)
	}
	// The hit dated 20 days ahead moved out of the default partition into its day's.
	if n := count(store.PartitionName("hits", store.Day(in20))); n != 1 {
		t.Fatalf("%d hits in the partition of %s, want the one moved from default", n, in20)
	}
	if n := count("hits_default"); n != 2 {
		t.Fatalf("%d hits left in default, want 2", n)
	}
	for _, id := range hitIDs {
		if _, err := a.Client.Hit.Get(sys, id); err != nil {
			t.Fatalf("hit %s lost: %v", id, err)
		}
	}
	// flytrap stats and the storage field see the partitions' rows and sizes.
	if _, err := a.SQL.Exec("ANALYZE hits"); err != nil {
		t.Fatal(err)
	}
	for _, exact := range []bool{true, false} {
		st, err := a.Stats(ctx, exact)
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range st.Tables {
			if tb.Name == "hits" && (tb.Rows != int64(len(hitIDs)) || tb.SizeBytes < 8192*int64(len(all))) {
				t.Fatalf("stats (exact %t) of partitioned hits: %d rows, %d bytes", exact, tb.Rows, tb.SizeBytes)
			}
		}
	}
	// The moved partition has the parent's indexes, like one created empty.
	var indexes int
	a.SQL.QueryRow(`SELECT COUNT(*) FROM pg_indexes WHERE tablename = $1`, store.PartitionName("hits", store.Day(in20))).Scan(&indexes)
	if indexes != 4 {
		t.Fatalf("the partition made over default's rows has %d indexes, want 4", indexes)
	}
}

// PartitionHits turns a plain hits table into one partitioned by day without losing a
// row: the days kept get their partitions, older rows go to default, ent's indexes and
// foreign keys come back; a second conversion is refused.
func TestPartitionHitsConvertsAPlainTable(t *testing.T) {
	dsn := ft.PostgresDSN(t)
	ctx := context.Background()
	db, err := store.OpenWith(ctx, dsn, store.Options{NoPartitions: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sys := ft.System()
	org := db.Client.Organization.Create().SetName("acme").SaveX(sys)
	ses := db.Client.Session.Create().SetOrgID(org.ID).SetSourceIP("203.0.113.9").SaveX(sys)
	now := time.Now().UTC()
	var want []string
	for _, at := range []time.Time{now.AddDate(0, 0, -40), now.AddDate(0, 0, -3), now, now.AddDate(1, 0, 0)} {
		h := db.Client.Hit.Create().SetOrgID(org.ID).SetSessionID(ses.ID).SetMethod("GET").SetPath("/").
			SetHeaders(map[string][]string{"Accept": {"*/*"}}).SetSourceIP("203.0.113.9").SetReceivedAt(at).SaveX(sys)
		want = append(want, h.ID)
	}
	n, err := db.Partition(ctx, "hits", now, 30*24*time.Hour)
	if err != nil || n != 4 {
		t.Fatalf("converted %d rows, %v", n, err)
	}
	list, ok, err := store.Partitions(ctx, db.SQL, "hits", "received_at")
	if err != nil || !ok || len(list) != 30+store.PartitionDays+2 {
		t.Fatalf("%d partitions (%v %v), want a day each from 30 days back to %d ahead and default", len(list), ok, err, store.PartitionDays)
	}
	var inDefault, indexes, fks int
	db.SQL.QueryRow(`SELECT COUNT(*) FROM hits_default`).Scan(&inDefault)
	db.SQL.QueryRow(`SELECT COUNT(*) FROM pg_indexes WHERE tablename = 'hits'`).Scan(&indexes)
	db.SQL.QueryRow(`SELECT COUNT(*) FROM pg_constraint WHERE conrelid = 'hits'::regclass AND contype = 'f'`).Scan(&fks)
	if inDefault != 2 || indexes != 4 || fks != 2 {
		t.Fatalf("default holds %d (want the 40-day-old and next year's), %d indexes (want 4), %d foreign keys (want 2)", inDefault, indexes, fks)
	}
	for _, id := range want {
		h, err := db.Client.Hit.Get(sys, id)
		if err != nil || h.Headers["Accept"][0] != "*/*" {
			t.Fatalf("hit %s after the conversion: %v %v", id, h, err)
		}
	}
	if _, err := db.Partition(ctx, "hits", now, 30*24*time.Hour); !errors.Is(err, store.ErrAlreadyPartitioned) {
		t.Fatalf("a second conversion: %v", err)
	}
	// The service's next start changes nothing.
	before := schemaOf(t, db.SQL)
	again, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
	if after := schemaOf(t, db.SQL); after != before {
		t.Fatalf("a start after the conversion changed the schema:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
