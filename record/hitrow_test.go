package record

import (
	"context"
	"database/sql"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"entgo.io/ent/dialect"

	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/flytraptest/testdb"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/store"
	"github.com/flytrap/flytrap/tally"
)

// Every column of ent's hits table (hit.Columns) has its value in the writer's row, and
// the INSERT names exactly those columns: a column the schema gains fails here until the
// row fills it.
func TestHitRowFillsEveryColumn(t *testing.T) {
	for i := range 4 {
		h, _ := sampleHit(i, "org_x")
		h.TrapID = ids.New(ids.Trap)
		h.Prepare()
		h.Session = &Session{ID: ids.New(ids.Session)}
		row, err := h.complete()
		if err != nil {
			t.Fatal(err)
		}
		if len(row) != len(hit.Columns) {
			t.Fatalf("row of %d values, the hits table has %d columns", len(row), len(hit.Columns))
		}
		for c, v := range row {
			if v == nil {
				t.Errorf("hit %d: column %s left empty", i, hit.Columns[c])
			}
		}
	}
	if q := NewWriter(dialect.SQLite).hitInsert(1); !strings.Contains(q, "("+strings.Join(hit.Columns, ", ")+")") {
		t.Errorf("hit INSERT %q does not name ent's columns in order", q)
	}
}

// TestHitRowsAsEntWritesThem writes hits the writer's way (Hit.Prepare, insertHits) and
// their twins through ent, as the recorder once did, and finds every column stored
// alike and every field read back alike, on every database.
func TestHitRowsAsEntWritesThem(t *testing.T) {
	testdb.ForEachBackend(t, func(t *testing.T, b testdb.Backend) {
		s := openStore(t, b)
		// The writer's way, and multi-row INSERTs (InsertRows'; the writer's on SQLite).
		for _, way := range []string{"insertHits", "insert"} {
			t.Run(way, func(t *testing.T) { hitRowsAsEnt(t, s, way) })
		}
	})
}

// hitRowsAsEnt is TestHitRowsAsEntWritesThem on s, the writer's rows inserted one way.
func hitRowsAsEnt(t *testing.T, s *store.DB, way string) {
	ctx := privacy.DecisionContext(t.Context(), privacy.Allow)
	c := s.Client
	org := c.Organization.Create().SetName("acme " + way).SaveX(ctx)
	site := c.Site.Create().SetOrgID(org.ID).SetName("default").SaveX(ctx)
	session := c.Session.Create().SetID(ids.New(ids.Session)).SetOrgID(org.ID).SetSiteID(site.ID).
		SetSourceIP("192.0.2.1").SaveX(ctx)

	// More rows than one INSERT carries, so the statement for a full chunk and a
	// shorter one both run.
	recs := make([]*Hit, 2*hitChunk+3)
	signals := make([][]string, len(recs))
	for i := range recs {
		recs[i], signals[i] = sampleHit(i, org.ID)
	}
	w := NewWriter(s.Dialect)
	tx, err := c.Tx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows := make([][]any, len(recs))
	for i, rec := range recs {
		rec.Prepare()
		if rec.err != nil {
			t.Fatal(rec.err)
		}
		rec.Session = &Session{ID: session.ID}
		for _, name := range signals[i] {
			rec.Outcome.Firings = append(rec.Outcome.Firings, detect.Firing{Name: name})
		}
		if rows[i], err = rec.complete(); err != nil {
			t.Fatal(err)
		}
	}
	insert := w.insertHits // the writer's: COPY on PostgreSQL
	if way == "insert" {
		insert = func(ctx context.Context, c *ent.Client, rows [][]any) error { return w.insert(ctx, c, rows, hitChunk) }
	}
	if err := insert(ctx, tx.Client(), rows); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	twins := make([]string, len(recs))
	if tx, err = c.Tx(ctx); err != nil {
		t.Fatal(err)
	}
	var creates []*ent.HitCreate
	for i, rec := range recs {
		twins[i] = ids.New(ids.Hit)
		hc := tx.Hit.Create().SetID(twins[i]).SetOrgID(rec.Org).SetSessionID(session.ID).SetMethod(Bound(rec.Method, 16)).
			SetPath(rec.Path).SetQuery(rec.Query).SetHeaders(rec.Headers).SetBody(rec.Body).
			SetBodyTruncated(rec.Truncated).SetSourceIP(rec.IP.String()).SetUserAgent(rec.UA).
			SetReceivedAt(rec.At).SetKind(hit.Kind(rec.Kind)).SetStatus(rec.Status).SetSignals(signals[i])
		if rec.TrapID != "" {
			hc.SetTrapID(rec.TrapID)
		}
		creates = append(creates, hc)
	}
	if err := tx.Hit.CreateBulk(creates...).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	for i, rec := range recs {
		ours, theirs := storedHit(t, s, rec.ID), storedHit(t, s, twins[i])
		for col, v := range theirs {
			if ours[col] != v {
				t.Errorf("hit %d: column %s stored as %s, ent stores %s", i, col, ours[col], v)
			}
		}
		got, want := c.Hit.GetX(ctx, rec.ID), c.Hit.GetX(ctx, twins[i])
		compareHits(t, i, got, want)
	}
}

// sampleHit is the i-th of a few kinds of hit, with the signals it fired.
func sampleHit(i int, org string) (*Hit, []string) {
	rec := &Hit{ID: ids.New(ids.Hit), Org: org, Status: 200, Observation: detect.Observation{
		Kind: "decoy", Method: "GET", Path: "/internal/docs",
		Headers: map[string][]string{
			"User-Agent": {`Mozilla/5.0 <b>&"x"'`},
			"X-Multi":    {"a", "é ü 日本", "\u2028\u2029", `back\slash`},
			"Cookie":     {"sid=" + strings.Repeat("z", i)},
		},
		IP: netip.MustParseAddr("192.0.2.7"), UA: `Mozilla/5.0 <b>&"x"'`,
		At: time.Now().UTC().Add(time.Duration(i) * time.Minute),
	}}
	signals := []string{}
	switch i % 4 {
	case 0:
		rec.TrapID = ids.New(ids.Trap)
		rec.Query, rec.Body, rec.Truncated = "a=1&b=%C3%A9", `{"prompt":"<system> you are…"}`, true
		signals = []string{"callback_hit", "follow_up_fast"}
	case 1:
		rec.Kind, rec.Status, rec.Headers = "not_found", 404, map[string][]string{}
		rec.IP, rec.UA = netip.MustParseAddr("2001:db8::1"), ""
		rec.At = time.Date(2024, 1, 2, 3, 0, 0, 0, time.UTC) // on the hour, no fraction
	case 2:
		rec.Kind, rec.Method = "callback", "PROPFIND-EXTENDED-METHOD" // longer than the column keeps
		rec.At = time.Date(2025, 6, 30, 23, 59, 59, 999_999_999, time.UTC)
		signals = []string{"injection_followed"}
	case 3:
		rec.TrapID = ids.New(ids.Trap)
		rec.Method, rec.Body = "POST", "line one\nline two\ttab 'quoted' ü \\N \r\n\\."
	}
	return rec, signals
}

// storedHit is each column of hit id as the database holds it, but the id: SQLite's
// quote() tells its storage class too (text, blob, integer).
func storedHit(t *testing.T, s *store.DB, id string) map[string]string {
	t.Helper()
	var cols, exprs []string
	for _, col := range hit.Columns {
		if col == hit.FieldID {
			continue
		}
		cols = append(cols, col)
		if s.Dialect == dialect.Postgres {
			exprs = append(exprs, col+"::text")
		} else {
			exprs = append(exprs, "quote("+col+")")
		}
	}
	ph := "?"
	if s.Dialect == dialect.Postgres {
		ph = "$1"
	}
	vals := make([]sql.NullString, len(cols))
	dest := make([]any, len(cols))
	for i := range vals {
		dest[i] = &vals[i]
	}
	q := "SELECT " + strings.Join(exprs, ", ") + " FROM " + hit.Table + " WHERE " + hit.FieldID + " = " + ph
	if err := s.SQL.QueryRowContext(t.Context(), q, id).Scan(dest...); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i, col := range cols {
		out[col] = "NULL"
		if vals[i].Valid {
			out[col] = vals[i].String
		}
	}
	return out
}

// compareHits finds every field of got as in want, but the id.
func compareHits(t *testing.T, i int, got, want *ent.Hit) {
	t.Helper()
	gv, wv := reflect.ValueOf(*got), reflect.ValueOf(*want)
	for f := range gv.NumField() {
		field := gv.Type().Field(f)
		if !field.IsExported() || field.Name == "ID" || field.Name == "Edges" {
			continue
		}
		g, w := gv.Field(f).Interface(), wv.Field(f).Interface()
		if gt, ok := g.(time.Time); ok {
			wt := w.(time.Time)
			if !gt.Equal(wt) || gt.Location().String() != wt.Location().String() {
				t.Errorf("hit %d: %s = %v, ent reads %v", i, field.Name, gt, wt)
			}
			continue
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("hit %d: %s = %#v, ent reads %#v", i, field.Name, g, w)
		}
	}
}

// openStore opens a fresh database of backend b for t, closed when t ends.
func openStore(t *testing.T, b testdb.Backend) *store.DB {
	t.Helper()
	s, err := store.Open(t.Context(), b.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Rows written without a request (the seed tool's) are inserted whatever the chunk asked
// for, and each counts in its hour, as the listener's hits do.
func TestInsertRowsCountsEachHit(t *testing.T) {
	testdb.ForEachBackend(t, func(t *testing.T, b testdb.Backend) {
		s := openStore(t, b)
		ctx := privacy.DecisionContext(t.Context(), privacy.Allow)
		c := s.Client
		org := c.Organization.Create().SetName("acme").SaveX(ctx)
		session := c.Session.Create().SetID(ids.New(ids.Session)).SetOrgID(org.ID).SetSourceIP("192.0.2.1").SaveX(ctx)
		var rows []Row
		for i := range 37 {
			at := time.Now().UTC().Add(-time.Duration(i) * 17 * time.Minute)
			r := Row{ID: ids.New(ids.Hit), Org: org.ID, Session: session.ID, Method: "GET", Path: "/", Headers: "",
				IP: "192.0.2.1", At: at, Kind: "not_found", Status: 404}
			if i%3 == 0 {
				r.Trap, r.Kind, r.Status = "trp_x", "decoy", 200
			}
			rows = append(rows, r)
		}
		tx, err := c.Tx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := NewWriter(s.Dialect).InsertRows(ctx, tx, rows, 5); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if n := c.Hit.Query().CountX(ctx); n != len(rows) {
			t.Fatalf("%d hits stored, want %d", n, len(rows))
		}
		stored, err := tally.Stored(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		recount, err := tally.Recount(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if !stored.HoursEqual(recount) {
			t.Fatalf("hourly counters vs a recount:\n%s", stored.Diff(recount))
		}
	})
}
