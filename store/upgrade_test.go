package store_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"entgo.io/ent/dialect"

	"github.com/flytrap/flytrap/ent/counter"
	"github.com/flytrap/flytrap/ent/session"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/store"
	"github.com/flytrap/flytrap/tally"
)

// Organizations and sites stored before the webhook network and host verification existed
// have no value for them: the schema upgrade must take such rows (a NOT NULL JSON column has
// no SQL default and failed on them), and they read as "nothing allowed, not verified".
func TestUpgradeKeepsRowsWithoutNewFields(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		db, err := store.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		sys := ft.System()
		org := db.Client.Organization.Create().SetName("old").SaveX(sys)
		site := db.Client.Site.Create().SetOrgID(org.ID).SetName("old").SetHost("old.example").SaveX(sys)
		// As a row written by the previous version: no allow-list at all.
		if _, err := db.SQL.ExecContext(t.Context(), `UPDATE organizations SET webhook_allow_cidrs = NULL`); err != nil {
			t.Fatal(err)
		}
		db.Close()

		db, err = store.Open(t.Context(), dsn)
		if err != nil {
			t.Fatalf("reopen over a row without an allow-list: %v", err)
		}
		defer db.Close()
		o := db.Client.Organization.GetX(sys, org.ID)
		if o.WebhookAllowPrivate || o.WebhookShowPrivateResponses || len(o.WebhookAllowCidrs) != 0 {
			t.Fatalf("old organization reads %+v", o)
		}
		if s := db.Client.Site.GetX(sys, site.ID); s.HostVerified {
			t.Fatal("an old host reads as verified")
		}
	})
}

// Hits stored before header lines hold their headers as JSON (jsonb on PostgreSQL): the
// upgrade keeps them readable as they were, and new hits are stored as header lines.
func TestUpgradeReadsJSONHeaders(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		db, err := store.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		sys := ft.System()
		org := db.Client.Organization.Create().SetName("old").SaveX(sys)
		site := db.Client.Site.Create().SetOrgID(org.ID).SetName("old").SaveX(sys)
		at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		ses := db.Client.Session.Create().SetOrgID(org.ID).SetSiteID(site.ID).SetSourceIP("192.0.2.1").
			SetFirstSeen(at).SetLastSeen(at).SaveX(sys)
		old := db.Client.Hit.Create().SetOrgID(org.ID).SetSessionID(ses.ID).SetMethod("GET").SetPath("/old").
			SetSourceIP("192.0.2.1").SetReceivedAt(at).SetHeaders(map[string][]string{"X": {"placeholder"}}).SaveX(sys)
		// As the previous version stored it: a JSON object of lists, in a jsonb column on PostgreSQL.
		oldJSON := `{"Accept": ["text/html"], "X-Forwarded-For": ["198.51.100.1", "203.0.113.7"]}`
		ex := func(q string, args ...any) {
			t.Helper()
			if db.Dialect == dialect.Postgres {
				q = strings.ReplaceAll(q, "?", "$1")
			}
			if _, err := db.SQL.ExecContext(t.Context(), q, args...); err != nil {
				t.Fatal(err)
			}
		}
		ex(`UPDATE hits SET headers = ?`, oldJSON)
		if db.Dialect == dialect.Postgres {
			ex(`ALTER TABLE hits ALTER COLUMN headers TYPE jsonb USING headers::jsonb`)
		}
		db.Close()

		db, err = store.Open(t.Context(), dsn)
		if err != nil {
			t.Fatalf("reopen over JSON headers: %v", err)
		}
		defer db.Close()
		want := map[string][]string{"Accept": {"text/html"}, "X-Forwarded-For": {"198.51.100.1", "203.0.113.7"}}
		if h := db.Client.Hit.GetX(sys, old.ID); !reflect.DeepEqual(map[string][]string(h.Headers), want) {
			t.Fatalf("old hit's headers read %v", h.Headers)
		}
		fresh := db.Client.Hit.Create().SetOrgID(org.ID).SetSessionID(ses.ID).SetMethod("GET").SetPath("/new").
			SetSourceIP("192.0.2.1").SetReceivedAt(at).SetHeaders(want).SaveX(sys)
		var raw string
		q := `SELECT headers FROM hits WHERE id = ?`
		if db.Dialect == dialect.Postgres {
			q = `SELECT headers FROM hits WHERE id = $1`
		}
		if err := db.SQL.QueryRowContext(t.Context(), q, fresh.ID).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		if raw != "Accept: text/html\nX-Forwarded-For: 198.51.100.1\nX-Forwarded-For: 203.0.113.7\n" {
			t.Fatalf("new hit's headers stored as %q", raw)
		}
		if h := db.Client.Hit.GetX(sys, fresh.ID); !reflect.DeepEqual(map[string][]string(h.Headers), want) {
			t.Fatalf("new hit's headers read %v", h.Headers)
		}
	})
}

// A database from before the counters (no counters tables, sessions and hits stored) gets
// them filled at its first start with the new version, exactly as a recount of its rows,
// and only then: a later start leaves them as they are.
func TestUpgradeBackfillsCountersOnce(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		db, err := store.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		sys := ft.System()
		c := db.Client
		var orgs []string
		for _, name := range []string{"old", "older"} {
			org := c.Organization.Create().SetName(name).SaveX(sys)
			site := c.Site.Create().SetOrgID(org.ID).SetName("default").SaveX(sys)
			tr := c.Trap.Create().SetOrgID(org.ID).SetSiteID(site.ID).SetName("t").SetType("page").SetPath("/" + name).SaveX(sys)
			orgs = append(orgs, org.ID)
			base := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
			for i := range 12 {
				s := c.Session.Create().SetOrgID(org.ID).SetSourceIP("192.0.2.1").
					SetSeverity([]session.Severity{"low", "medium", "high", "critical"}[i%4]).
					SetClassification([]session.Classification{"HUMAN", "BOT", "AI_AGENT"}[i%3]).
					SetTripwiresFired(i % 3).SetPromptsCaptured(i % 2).SaveX(sys)
				for h := range i + 1 {
					hc := c.Hit.Create().SetOrgID(org.ID).SetSessionID(s.ID).SetMethod("GET").SetPath("/").
						SetSourceIP("192.0.2.1").SetHeaders(map[string][]string{}).SetReceivedAt(base.Add(time.Duration(i*h) * 17 * time.Minute))
					if h%2 == 0 {
						hc.SetTrapID(tr.ID)
					}
					hc.ExecX(sys)
				}
			}
		}
		want, err := tally.Recount(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		// As the previous version left it: no counters, no note of an upgrade.
		for _, table := range []string{"counters", "hit_hours", "flytrap_upgrades"} {
			if _, err := db.SQL.ExecContext(t.Context(), "DROP TABLE "+table); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()

		db, err = store.Open(t.Context(), dsn)
		if err != nil {
			t.Fatalf("reopen without counters: %v", err)
		}
		got, err := tally.Stored(t.Context(), db.Client)
		if err != nil {
			t.Fatal(err)
		}
		if want.Empty() || !got.Equal(want) {
			t.Fatalf("backfilled counters vs a recount:\n%s", got.Diff(want))
		}
		// Once: a counter changed after the backfill stays changed over a restart.
		if _, err := db.SQL.ExecContext(t.Context(), "UPDATE counters SET value = value + 1000 WHERE name = 'tripwires'"); err != nil {
			t.Fatal(err)
		}
		db.Close()
		db, err = store.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		n := db.Client.Counter.Query().Where(counter.Name(tally.Tripwires), counter.OrgID(orgs[0])).OnlyX(sys).Value
		if n < 1000 {
			t.Fatalf("the backfill ran again at the next start (tripwires %d)", n)
		}
	})
}

// A database stored before trap_sessions existed gets it filled from the sessions'
// traps_triggered once, at the next start: the trap filter then finds every session.
func TestUpgradeFillsTrapSessions(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		db, err := store.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		sys := ft.System()
		org := db.Client.Organization.Create().SetName("old").SaveX(sys)
		for i, traps := range [][]string{{"trp_a"}, {"trp_a", "trp_b"}, {}, {"trp_c", "trp_a", "trp_b"}} {
			db.Client.Session.Create().SetOrgID(org.ID).SetSourceIP(fmt.Sprintf("192.0.2.%d", i)).SetTrapsTriggered(traps).SaveX(sys)
		}
		// As a database of the previous version: no rows, no note.
		for _, q := range []string{`DELETE FROM trap_sessions`, `DELETE FROM flytrap_upgrades WHERE name = 'trap-sessions-1'`} {
			if _, err := db.SQL.ExecContext(t.Context(), q); err != nil {
				t.Fatal(err)
			}
		}
		if err := store.CheckTrapSessions(t.Context(), db.Client); err == nil {
			t.Fatal("the emptied table agrees with the sessions: the check checks nothing")
		}
		db.Close()

		db, err = store.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := store.CheckTrapSessions(t.Context(), db.Client); err != nil {
			t.Fatal(err)
		}
		if n := db.Client.TrapSession.Query().CountX(sys); n != 6 {
			t.Fatalf("%d rows, want 6", n)
		}
		if done, err := store.BackfillTrapSessions(t.Context(), db.Client); err != nil || done {
			t.Fatalf("a second backfill ran (%v, %v)", done, err)
		}
	})
}

// A database from before the client fingerprints (no ja4, h2_fingerprint, header_order
// columns on hits) gains them at its next start: its hits read with none, new hits store them.
func TestUpgradeAddsFingerprintColumns(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		db, err := store.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		sys := ft.System()
		org := db.Client.Organization.Create().SetName("old").SaveX(sys)
		site := db.Client.Site.Create().SetOrgID(org.ID).SetName("old").SaveX(sys)
		at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		ses := db.Client.Session.Create().SetOrgID(org.ID).SetSiteID(site.ID).SetSourceIP("192.0.2.1").
			SetFirstSeen(at).SetLastSeen(at).SaveX(sys)
		old := db.Client.Hit.Create().SetOrgID(org.ID).SetSessionID(ses.ID).SetMethod("GET").SetPath("/old").
			SetSourceIP("192.0.2.1").SetReceivedAt(at).SetHeaders(map[string][]string{}).SaveX(sys)
		for _, col := range []string{"ja4", "h2_fingerprint", "header_order"} { // as the previous version's table
			if _, err := db.SQL.ExecContext(t.Context(), `ALTER TABLE hits DROP COLUMN `+col); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()

		db, err = store.Open(t.Context(), dsn)
		if err != nil {
			t.Fatalf("reopen without the fingerprint columns: %v", err)
		}
		defer db.Close()
		if h := db.Client.Hit.GetX(sys, old.ID); h.Ja4 != nil || h.H2Fingerprint != nil || h.HeaderOrder != nil {
			t.Fatalf("an old hit reads fingerprints %v %v %v", h.Ja4, h.H2Fingerprint, h.HeaderOrder)
		}
		fresh := db.Client.Hit.Create().SetOrgID(org.ID).SetSessionID(ses.ID).SetMethod("GET").SetPath("/new").
			SetSourceIP("192.0.2.1").SetReceivedAt(at).SetHeaders(map[string][]string{}).
			SetJa4("t13d1812h1_85036bcba153_b26ce05bbdd6").SetHeaderOrder("h105_0e0009a49490").SaveX(sys)
		if h := db.Client.Hit.GetX(sys, fresh.ID); h.Ja4 == nil || *h.Ja4 != "t13d1812h1_85036bcba153_b26ce05bbdd6" || h.H2Fingerprint != nil {
			t.Fatalf("a new hit reads %v %v", h.Ja4, h.H2Fingerprint)
		}
	})
}
