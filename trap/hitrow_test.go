package trap

import (
	"database/sql"
	"log/slog"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"entgo.io/ent/dialect"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/flytraptest/testdb"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/store"
)

// TestHitRowsAsEntWritesThem writes hits the recorder's way (hitRow, insertHits) and
// their twins through ent, as the recorder once did, and finds every column stored
// alike and every field read back alike, on every database.
func TestHitRowsAsEntWritesThem(t *testing.T) {
	if got, want := slices.Sorted(slices.Values(hitColumns)), slices.Sorted(slices.Values(hit.Columns)); !slices.Equal(got, want) {
		t.Fatalf("hitColumns = %q, want the hit's columns %q", got, want)
	}
	testdb.ForEachBackend(t, func(t *testing.T, b testdb.Backend) {
		s := openStore(t, b)
		ctx := privacy.DecisionContext(t.Context(), privacy.Allow)
		c := s.Client
		org := c.Organization.Create().SetName("acme").SaveX(ctx)
		site := c.Site.Create().SetOrgID(org.ID).SetName("default").SaveX(ctx)
		session := c.Session.Create().SetID(ids.New(ids.Session)).SetOrgID(org.ID).SetSiteID(site.ID).
			SetSourceIP("192.0.2.1").SaveX(ctx)

		// More rows than one INSERT carries, so the statement for a full chunk and a
		// shorter one both run.
		recs := make([]*hitRecord, 2*hitChunk+3)
		signals := make([][]string, len(recs))
		for i := range recs {
			recs[i], signals[i] = sampleHit(i, org.ID)
		}
		e := &Engine{dialect: s.Dialect}
		tx, err := c.Tx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rows := make([][]any, len(recs))
		for i, rec := range recs {
			row, err := hitRow(rec)
			if err != nil {
				t.Fatal(err)
			}
			if row[hitColSignals], err = signalsJSON(signals[i]); err != nil {
				t.Fatal(err)
			}
			row[hitColSession] = session.ID
			rows[i] = row
		}
		if err := e.insertHits(ctx, tx.Client(), rows); err != nil {
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
			hc := tx.Hit.Create().SetID(twins[i]).SetOrgID(rec.org).SetSessionID(session.ID).SetMethod(bound(rec.method, 16)).
				SetPath(rec.path).SetQuery(rec.query).SetHeaders(rec.headers).SetBody(rec.body).
				SetBodyTruncated(rec.truncated).SetSourceIP(rec.ip.String()).SetUserAgent(rec.ua).
				SetReceivedAt(rec.receivedAt).SetKind(hit.Kind(rec.kind)).SetStatus(rec.status).SetSignals(signals[i])
			if rec.trap != nil {
				hc.SetTrapID(rec.trap.ID)
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
			ours, theirs := storedHit(t, s, rec.id), storedHit(t, s, twins[i])
			for col, v := range theirs {
				if ours[col] != v {
					t.Errorf("hit %d: column %s stored as %s, ent stores %s", i, col, ours[col], v)
				}
			}
			got, want := c.Hit.GetX(ctx, rec.id), c.Hit.GetX(ctx, twins[i])
			compareHits(t, i, got, want)
		}
	})
}

// A hit ent's validators refuse fails alone, as it did when ent wrote hits: the batch
// falls back to one hit at a time, and the others are written.
func TestRefusedHitFailsAlone(t *testing.T) {
	testdb.ForEachBackend(t, func(t *testing.T, b testdb.Backend) {
		s := openStore(t, b)
		ctx := privacy.DecisionContext(t.Context(), privacy.Allow)
		e, err := New(ctx, DefaultConfig(), s.Client, s.Dialect, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		org := s.Client.Organization.Create().SetName("acme").SaveX(ctx)
		site := s.Client.Site.Create().SetOrgID(org.ID).SetName("default").SaveX(ctx)
		good, _ := sampleHit(0, org.ID)
		bad, _ := sampleHit(3, org.ID)
		bad.path = "/" + strings.Repeat("p", 2048) // longer than the column keeps
		var batch []*job
		for _, rec := range []*hitRecord{good, bad} {
			rec.site = site.ID
			rec.row, rec.rowErr = hitRow(rec)
			batch = append(batch, &job{rec: rec, done: make(chan error, 1)})
		}
		e.write(ctx, batch)
		if err := <-batch[0].done; err != nil {
			t.Fatalf("the valid hit failed: %v", err)
		}
		if err := <-batch[1].done; err == nil {
			t.Fatal("a hit with a path longer than its column was written")
		}
		for rec, want := range map[*hitRecord]bool{good: true, bad: false} {
			if got := s.Client.Hit.Query().Where(hit.ID(rec.id)).ExistX(ctx); got != want {
				t.Errorf("hit of %d-byte path stored: %t, want %t", len(rec.path), got, want)
			}
		}
	})
}

// sampleHit is the i-th of a few kinds of hit, with the signals it fired.
func sampleHit(i int, org string) (*hitRecord, []string) {
	rec := &hitRecord{
		id: ids.New(ids.Hit), org: org, kind: "decoy", status: 200, method: "GET", path: "/internal/docs",
		headers: map[string][]string{
			"User-Agent": {`Mozilla/5.0 <b>&"x"'`},
			"X-Multi":    {"a", "é ü 日本", "\u2028\u2029", `back\slash`},
			"Cookie":     {"sid=" + strings.Repeat("z", i)},
		},
		ip: netip.MustParseAddr("192.0.2.7"), ua: `Mozilla/5.0 <b>&"x"'`,
		receivedAt: time.Now().UTC().Add(time.Duration(i) * time.Minute),
	}
	signals := []string{}
	switch i % 4 {
	case 0:
		rec.trap = &ent.Trap{ID: ids.New(ids.Trap)}
		rec.query, rec.body, rec.truncated = "a=1&b=%C3%A9", `{"prompt":"<system> you are…"}`, true
		signals = []string{"callback_hit", "follow_up_fast"}
	case 1:
		rec.kind, rec.status, rec.headers = "not_found", 404, map[string][]string{}
		rec.ip, rec.ua = netip.MustParseAddr("2001:db8::1"), ""
		rec.receivedAt = time.Date(2024, 1, 2, 3, 0, 0, 0, time.UTC) // on the hour, no fraction
	case 2:
		rec.kind, rec.method = "callback", "PROPFIND-EXTENDED-METHOD" // longer than the column keeps
		rec.receivedAt = time.Date(2025, 6, 30, 23, 59, 59, 999_999_999, time.UTC)
		signals = []string{"injection_followed"}
	case 3:
		rec.trap = &ent.Trap{ID: ids.New(ids.Trap)}
		rec.method, rec.body = "POST", "line one\nline two\ttab 'quoted' ü"
	}
	return rec, signals
}

// storedHit is each column of hit id as the database holds it, but the id: SQLite's
// quote() tells its storage class too (text, blob, integer).
func storedHit(t *testing.T, s *store.DB, id string) map[string]string {
	t.Helper()
	var cols, exprs []string
	for _, col := range hitColumns {
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
