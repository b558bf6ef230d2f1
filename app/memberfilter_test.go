package app

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"entgo.io/contrib/entgql"
	"github.com/oklog/ulid/v2"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/schematype"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/flytraptest/testdb"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/record"
	"github.com/flytrap/flytrap/store"
)

// TestSessionsOnTrapAsHasHitsWith: the sessions list filtered by a trap gives, page by page,
// exactly what ent's hasHitsWith gives, whichever plan sessionsByMembership picks (from the trap's
// hits, or walking the sessions), alone and with other filters, including sessions whose
// traps_triggered names a trap they have no stored hit on (their hits purged).
func TestSessionsOnTrapAsHasHitsWith(t *testing.T) {
	testdb.ForEachBackend(t, func(t *testing.T, b testdb.Backend) {
		ctx, c := openBackend(t, b)
		o := c.Organization.Create().SetName("o").SaveX(ctx)
		traps := []string{"trp_01busy0000000000000000000", "trp_01mid00000000000000000000", "trp_01rare0000000000000000000", "trp_01none0000000000000000000"}
		weights := []int{70, 20, 3, 0}
		// TLS clients: a common one, a rare one, one no hit came with.
		ja4s := []string{"t13d1516h2_8daaf6152771_d8a2da3f94cd", "t13d3112h2_e8f1e7e78f70_6bebaf5329ac", "t13d1812h1_85036bcba153_b26ce05bbdd6"}
		rnd := rand.New(rand.NewPCG(1, 2))
		now := time.Now().UTC().Truncate(time.Millisecond)
		var sessions []*ent.SessionCreate
		var hits []*ent.HitCreate
		for i := range 300 {
			sid := fmt.Sprintf("ses_%026d", i)
			// Ties on last_seen too, so the page boundaries fall between equal values.
			last := now.Add(-time.Duration(rnd.IntN(100)) * time.Minute)
			first := last.Add(-time.Minute)
			var hit []string
			for h := range 1 + rnd.IntN(4) {
				at := first.Add(time.Duration(h) * time.Second)
				hc := c.Hit.Create().SetID(ids.Format(ids.Hit, ulid.MustNew(ulid.Timestamp(at), ulid.DefaultEntropy()))).SetOrgID(o.ID).SetSessionID(sid).
					SetMethod("GET").SetPath("/").SetSourceIP("192.0.2.1").SetReceivedAt(at).SetHeaders(schematype.Headers{})
				if r := rnd.IntN(100); r < 60 {
					hc.SetJa4(ja4s[0])
				} else if r < 64 {
					hc.SetJa4(ja4s[1])
				}
				for j, tr := range traps {
					if rnd.IntN(100) < weights[j] {
						hc.SetTrapID(tr)
						if !slices.Contains(hit, tr) {
							hit = append(hit, tr)
						}
						break
					}
				}
				hits = append(hits, hc)
			}
			triggered := slices.Clone(hit)
			if i%17 == 0 && !slices.Contains(triggered, traps[1]) {
				// Its hit on the trap was purged: it came 40 days ago, before every hit stored.
				triggered = append(triggered, traps[1])
				first = now.AddDate(0, 0, -40)
			}
			if triggered == nil {
				triggered = []string{}
			}
			sessions = append(sessions, c.Session.Create().SetID(sid).SetOrgID(o.ID).SetSourceIP("192.0.2.1").
				SetClassification([]session.Classification{session.ClassificationHUMAN, session.ClassificationAI_AGENT}[i%2]).
				SetFirstSeen(first).SetLastSeen(last).SetTrapsTriggered(triggered))
		}
		if _, err := record.CreateSessions(ctx, c, sessions...); err != nil {
			t.Fatal(err)
		}
		// trap_sessions came with the sessions (record counts them): as the writer's.
		if err := store.CheckTrapSessions(ctx, c); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(hits); i += 200 {
			if _, err := record.CreateHits(ctx, c, hits[i:min(i+200, len(hits))]...); err != nil {
				t.Fatal(err)
			}
		}
		// Sessions first seen after the oldest hit (and an hour) are kept without a hit probe,
		// the others with one: both kinds are here.
		r := New(c, nil, nil)
		keptSince, ok, err := r.allHitsKeptSince(ctx, c)
		if err != nil || !ok {
			t.Fatalf("oldest hit: %v %v", ok, err)
		}
		if keptSince.Location() != time.UTC {
			// SQLite compares times as text: a local time would shift the cut by the zone's offset.
			t.Fatalf("allHitsKeptSince answered %s, not in UTC", keptSince)
		}
		if purged, err := r.hitsPurgedSince(ctx, c, keptSince); err != nil || purged {
			t.Fatalf("hits purged since the oldest was read, with none purged: %v %v", purged, err)
		}
		if n := c.Session.Query().Where(session.FirstSeenGTE(keptSince)).CountX(ctx); n < 50 || n > 250 {
			t.Fatalf("%d of 300 sessions first seen after %s: the data does not test both ways", n, keptSince)
		}
		since := now.Add(-50 * time.Minute)
		defer func(was int) { trapListMax = was }(trapListMax)
		for _, limit := range []int{1000, 30, 0} { // from trap_sessions always, sometimes, never
			trapListMax = limit
			// By trap, by JA4, and by both (one hit matching both: left to ent).
			var filters [][]*ent.HitWhereInput
			for _, tr := range traps {
				filters = append(filters, []*ent.HitWhereInput{{TrapID: ptr(tr)}})
			}
			for _, j := range ja4s {
				filters = append(filters, []*ent.HitWhereInput{{Ja4: ptr(j)}})
			}
			filters = append(filters, []*ent.HitWhereInput{{Ja4: ptr(ja4s[1]), TrapID: ptr(traps[0])}})
			for fi, hf := range filters {
				tr := "filter " + fmt.Sprint(fi)
				for _, extra := range []func(*ent.SessionWhereInput){
					func(*ent.SessionWhereInput) {},
					func(w *ent.SessionWhereInput) { w.Classification = ptr(session.ClassificationAI_AGENT) },
					func(w *ent.SessionWhereInput) { w.LastSeenGTE = &since },
				} {
					where := &ent.SessionWhereInput{HasHitsWith: slices.Clone(hf)}
					extra(where)
					want, err := where.Filter(c.Session.Query())
					if err != nil {
						t.Fatal(err)
					}
					wantIDs := want.Order(ent.Desc(session.FieldLastSeen), ent.Desc(session.FieldID)).IDsX(ctx)
					var got []string
					var after *entgql.Cursor[string]
					for page := 0; ; page++ {
						first := 7
						conn, err := r.Sessions(ctx, after, &first, nil, nil, nil, where)
						if err != nil {
							t.Fatal(err)
						}
						for _, e := range conn.Edges {
							got = append(got, e.Node.ID)
						}
						if !conn.PageInfo.HasNextPage {
							break
						}
						after = conn.PageInfo.EndCursor
					}
					rewritten, _, err := r.sessionsByMembership(ctx, where, false)
					if err != nil {
						t.Fatal(err)
					}
					if n, err := r.sessionRows(rewritten)(ctx); err != nil || n != len(wantIDs) {
						t.Fatalf("%s, trapListMax %d: totalCount %d (%v), want %d", tr, limit, n, err, len(wantIDs))
					}
					if !slices.Equal(got, wantIDs) {
						t.Fatalf("trapListMax %d, trap %s, where %+v: got %d sessions %v, want %d %v", limit, tr, where, len(got), got, len(wantIDs), wantIDs)
					}
					if hf[0].Ja4 == nil && (*hf[0].TrapID == traps[0] && len(wantIDs) < 100 || *hf[0].TrapID == traps[3] && len(wantIDs) != 0) ||
						hf[0].TrapID == nil && (*hf[0].Ja4 == ja4s[0] && len(wantIDs) < 100 || *hf[0].Ja4 == ja4s[2] && len(wantIDs) != 0) {
						t.Fatalf("%s: %d sessions: the data does not test what it should", tr, len(wantIDs))
					}
				}
			}
		}
	})
}

// A purge between the trap filter's look at the oldest hit and its page makes the list read
// again, probing every session: hitsPurgedSince notices the oldest hit moved, though the App
// remembers the oldest it found and only checks that it is still there.
func TestHitsPurgedSince(t *testing.T) {
	testdb.ForEachBackend(t, func(t *testing.T, b testdb.Backend) {
		ctx, c := openBackend(t, b)
		r := New(c, nil, nil)
		if _, ok, err := r.allHitsKeptSince(ctx, c); ok || err != nil {
			t.Fatalf("no hit stored: %v %v", ok, err)
		}
		o := c.Organization.Create().SetName("o").SaveX(ctx)
		s := c.Session.Create().SetOrgID(o.ID).SetSourceIP("192.0.2.1").SaveX(ctx)
		addHit := func(ago time.Duration) string {
			at := time.Now().Add(-ago).UTC()
			// Received a few milliseconds before its id was made, as the listener does (it
			// reads the body between the two): the probe names the stored key, not the id's time.
			return c.Hit.Create().SetID(ids.Format(ids.Hit, ulid.MustNew(ulid.Timestamp(at), ulid.DefaultEntropy()))).SetOrgID(o.ID).
				SetSessionID(s.ID).SetMethod("GET").SetPath("/").SetSourceIP("192.0.2.1").SetReceivedAt(at.Add(-3 * time.Millisecond)).SetHeaders(schematype.Headers{}).SaveX(ctx).ID
		}
		older, newer := addHit(48*time.Hour), addHit(time.Hour)
		near := func(got time.Time, ago time.Duration) bool {
			return got.Sub(time.Now().Add(-ago)).Abs() < 5*time.Second
		}
		kept, ok, err := r.allHitsKeptSince(ctx, c)
		if !ok || err != nil || !near(kept, 47*time.Hour) {
			t.Fatalf("oldest hit + 1 h: %s %v %v", kept, ok, err)
		}
		if id := r.oldestHit.Load(); id == nil || id.ID != older {
			t.Fatalf("remembered %v, want the oldest hit %s", id, older)
		}
		if purged, err := r.hitsPurgedSince(ctx, c, time.Time{}); purged || err != nil {
			t.Fatalf("no time used: %v %v", purged, err)
		}
		if purged, err := r.hitsPurgedSince(ctx, c, kept); purged || err != nil {
			t.Fatalf("nothing purged: purged %v %v", purged, err)
		}
		// An older hit stored later (a journal replayed late): the remembered answer stands,
		// which only probes more sessions; an App that never looked finds the older one.
		oldest := addHit(72 * time.Hour)
		if again, _, err := r.allHitsKeptSince(ctx, c); err != nil || !again.Equal(kept) {
			t.Fatalf("after an older hit came: %s %v, want %s as remembered", again, err, kept)
		}
		if fresh, _, err := New(c, nil, nil).allHitsKeptSince(ctx, c); err != nil || !near(fresh, 71*time.Hour) {
			t.Fatalf("a new App: %s %v, want the older hit + 1 h", fresh, err)
		}
		// The remembered hit purged while the older one is stored: the answer moved back, which
		// counts as a purge too (the page read with the remembered one may list too much).
		c.Hit.DeleteOneID(older).ExecX(ctx)
		if purged, err := r.hitsPurgedSince(ctx, c, kept); !purged || err != nil {
			t.Fatalf("after the remembered hit went, an older one stored: purged %v %v", purged, err)
		}
		if id := r.oldestHit.Load(); id == nil || id.ID != oldest {
			t.Fatalf("remembered %v, want %s", id, oldest)
		}
		kept, _, _ = r.allHitsKeptSince(ctx, c)
		// The remembered hit purged: the oldest is looked for again.
		c.Hit.DeleteOneID(oldest).ExecX(ctx)
		if purged, err := r.hitsPurgedSince(ctx, c, kept); !purged || err != nil {
			t.Fatalf("after the oldest hit went: purged %v %v", purged, err)
		}
		if id := r.oldestHit.Load(); id == nil || id.ID != newer {
			t.Fatalf("remembered %v, want %s", id, newer)
		}
		c.Hit.DeleteOneID(newer).ExecX(ctx)
		if purged, err := r.hitsPurgedSince(ctx, c, kept); !purged || err != nil {
			t.Fatalf("after every hit went: purged %v %v", purged, err)
		}
		if _, ok, err := r.allHitsKeptSince(ctx, c); ok || err != nil || r.oldestHit.Load() != nil {
			t.Fatalf("no hit stored any more: %v %v", ok, err)
		}
	})
}

func ptr[T any](v T) *T { return &v }

// openBackend opens a database on b for the test and returns its client and a context that
// may do anything (the tests write their data as the system does).
func openBackend(t *testing.T, b testdb.Backend) (context.Context, *ent.Client) {
	t.Helper()
	ctx := privacy.DecisionContext(context.Background(), privacy.Allow)
	db, err := store.Open(ctx, b.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return ctx, db.Client
}
