package trap

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/flytraptest/testdb"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/record"
	"github.com/flytrap/flytrap/store"
)

// A visitor this instance does not remember (a restart, another instance) finds its open
// session in the database: the same organization, address and user agent, seen within
// the idle gap. Anyone else, or the same visitor after the gap, starts a new session.
func TestOpenSessionFromTheDatabase(t *testing.T) {
	testdb.ForEachBackend(t, func(t *testing.T, be testdb.Backend) {
		ctx := privacy.DecisionContext(context.Background(), privacy.Allow)
		db, err := store.Open(ctx, be.DSN(t))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		org := db.Client.Organization.Create().SetName("acme").SaveX(ctx)
		other := db.Client.Organization.Create().SetName("other").SaveX(ctx)
		site := db.Client.Site.Create().SetOrgID(org.ID).SetName("main").SaveX(ctx)
		otherSite := db.Client.Site.Create().SetOrgID(other.ID).SetName("main").SaveX(ctx)
		tr := db.Client.Trap.Create().SetOrgID(org.ID).SetSiteID(site.ID).SetName("Docs").SetType("page").
			SetPath("/internal/docs").SaveX(ctx)
		at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
		ip := netip.MustParseAddr("192.0.2.7")
		// write records one hit on an engine of its own (nothing remembered) and returns its session.
		write := func(orgID, siteID, ua string, ip netip.Addr, at time.Time) string {
			t.Helper()
			e, err := New(ctx, DefaultConfig(), db.Client, db.Dialect, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			rec := &hitRecord{Hit: record.Hit{ID: ids.New(ids.Hit), Org: orgID, Site: siteID, Status: 200,
				Observation: detect.Observation{Kind: "decoy", Method: "GET", Path: "/internal/docs",
					Headers: map[string][]string{"User-Agent": {ua}}, UA: ua, IP: ip, At: at}}}
			if orgID == org.ID {
				rec.trap = tr
			}
			rec.prepare()
			if err := e.writeBatch(ctx, []*job{{rec: rec}}); err != nil {
				t.Fatal(err)
			}
			h, err := db.Client.Hit.Get(ctx, rec.ID)
			if err != nil {
				t.Fatal(err)
			}
			return h.SessionID
		}
		first := write(org.ID, site.ID, "curl/8.5", ip, at)
		if got := write(org.ID, site.ID, "curl/8.5", ip, at.Add(29*time.Minute)); got != first {
			t.Fatalf("the visitor's next hit within the idle gap made session %s, want %s", got, first)
		}
		for name, got := range map[string]string{
			"another user agent":   write(org.ID, site.ID, "curl/8.6", ip, at.Add(30*time.Minute)),
			"another address":      write(org.ID, site.ID, "curl/8.5", netip.MustParseAddr("192.0.2.8"), at.Add(30*time.Minute)),
			"another organization": write(other.ID, otherSite.ID, "curl/8.5", ip, at.Add(30*time.Minute)),
			"after the idle gap":   write(org.ID, site.ID, "curl/8.5", ip, at.Add(29*time.Minute+31*time.Minute)),
		} {
			if got == first {
				t.Errorf("%s joined the visitor's session", name)
			}
		}
		if s := db.Client.Session.GetX(ctx, first); s.HitCount != 2 {
			t.Fatalf("the visitor's session counts %d hits, want 2", s.HitCount)
		}
	})
}
