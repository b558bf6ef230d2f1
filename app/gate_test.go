package app

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/flytraptest/testdb"
	"github.com/flytrap/flytrap/record"
)

// TestGateAsAScan: the gate's count (exact up to 1,000, then 1,001 and inexact) and its ten
// newest sessions are what a plain scan of the unresolved sessions gives, for each failOn,
// with and without since, with last_seen ties across the (severity, state) ranges it reads
// one by one, and with more sessions than the cap in one range and in several.
func TestGateAsAScan(t *testing.T) {
	testdb.ForEachBackend(t, func(t *testing.T, b testdb.Backend) {
		ctx, c := openBackend(t, b)
		o := c.Organization.Create().SetName("o").SaveX(ctx)
		sevs := []session.Severity{session.SeverityCritical, session.SeverityHigh, session.SeverityMedium, session.SeverityLow}
		states := []session.TriageState{session.TriageStateOpen, session.TriageStateAcknowledged, session.TriageStateResolved, session.TriageStateIgnored}
		rnd := rand.New(rand.NewPCG(3, 4))
		now := time.Now().UTC().Truncate(time.Second)
		var creates []*ent.SessionCreate
		for i := range 2600 {
			// Few critical and high sessions, more than the cap of medium ones alone.
			sev := sevs[2+rnd.IntN(2)]
			if i < 60 {
				sev = sevs[i%2]
			}
			creates = append(creates, c.Session.Create().SetID(fmt.Sprintf("ses_%026d", i)).SetOrgID(o.ID).SetSourceIP("192.0.2.1").
				SetSeverity(sev).SetTriageState(states[rnd.IntN(len(states))]).
				SetLastSeen(now.Add(-time.Duration(rnd.IntN(600))*time.Minute))) // ties on last_seen
		}
		for i := 0; i < len(creates); i += 500 {
			if _, err := record.CreateSessions(ctx, c, creates[i:min(i+500, len(creates))]...); err != nil {
				t.Fatal(err)
			}
		}
		all := c.Session.Query().AllX(ctx)
		r := New(c, nil, nil)
		for _, failOn := range sevs {
			for _, since := range []*time.Time{nil, ptr(now.Add(-2 * time.Hour)), ptr(now.Add(time.Hour))} {
				name := fmt.Sprintf("%s since %v", failOn, since)
				sev, _ := SeveritiesFrom(failOn)
				var want []*ent.Session
				for _, s := range all {
					if slices.Contains(sev, s.Severity) && slices.Contains(unresolved, s.TriageState) && (since == nil || !s.LastSeen.Before(*since)) {
						want = append(want, s)
					}
				}
				slices.SortFunc(want, func(x, y *ent.Session) int {
					if c := y.LastSeen.Compare(x.LastSeen); c != 0 {
						return c
					}
					return strings.Compare(y.ID, x.ID)
				})
				got, err := r.Gate(ctx, failOn, since)
				if err != nil {
					t.Fatal(err)
				}
				wantCount, exact := len(want), true
				if wantCount > gateCountCap {
					wantCount, exact = gateCountCap+1, false
				}
				if got.Count != wantCount || got.CountExact != exact || got.Failed != (len(want) > 0) {
					t.Errorf("%s: count %d exact %v failed %v, want %d %v %v", name, got.Count, got.CountExact, got.Failed, wantCount, exact, len(want) > 0)
				}
				var gotIDs, wantIDs []string
				for _, s := range got.Sessions {
					gotIDs = append(gotIDs, s.ID)
				}
				for _, s := range want[:min(len(want), gateSessions)] {
					wantIDs = append(wantIDs, s.ID)
				}
				if !slices.Equal(gotIDs, wantIDs) {
					t.Errorf("%s: sessions %v, want %v", name, gotIDs, wantIDs)
				}
			}
		}
		// The data tests what it says: one range alone is over the cap, and high is not.
		if n := c.Session.Query().Where(session.SeverityEQ(session.SeverityMedium), session.TriageStateEQ(session.TriageStateOpen)).CountX(ctx); n <= gateCountCap/4 {
			t.Fatalf("%d open medium sessions", n)
		}
	})
}
