package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/session"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/record"
)

// TestSessionsTotalCountCapped: under a filter the counters do not cover, totalCount counts
// up to 10,000 and answers 10001 with totalCountExact false beyond; exactly 10,000 matches are
// exact; the counters' counts are exact at any size; another organization's sessions never count.
func TestSessionsTotalCountCapped(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		ten := env.Tenant("acme")
		other := env.Tenant("other")
		now := time.Now().UTC().Truncate(time.Second)
		// 10,000 sessions seen in the last hour (2,000 of them critical), 50 seen two days ago,
		// and 1,000 of another organization seen now.
		seed := func(org string, n int, lastSeen time.Time, crit int) {
			const chunk = 500
			for i := 0; i < n; i += chunk {
				var bulk []*ent.SessionCreate
				for j := i; j < min(i+chunk, n); j++ {
					sev := session.SeverityLow
					if j < crit {
						sev = session.SeverityCritical
					}
					bulk = append(bulk, env.DB.Client.Session.Create().SetOrgID(org).
						SetSourceIP(fmt.Sprintf("198.51.%d.%d", j/250, j%250)).SetUserAgent("seed/1.0").
						SetFirstSeen(lastSeen).SetLastSeen(lastSeen.Add(-time.Duration(j)*time.Millisecond)).SetSeverity(sev))
				}
				if _, err := record.CreateSessions(ft.System(), env.DB.Client, bulk...); err != nil {
					t.Fatalf("seed sessions: %v", err)
				}
			}
		}
		seed(ten.Org.ID, 10000, now, 2000)
		seed(ten.Org.ID, 50, now.Add(-48*time.Hour), 0)
		seed(other.Org.ID, 1000, now, 0)

		const q = `query($w: SessionWhereInput) { sessions(first: 2, where: $w) { totalCount totalCountExact edges { node { id } } } }`
		for _, tc := range []struct {
			name  string
			where map[string]any
			count int
			exact bool
		}{
			{"unfiltered: counters", nil, 10050, true},
			{"severity: counters", map[string]any{"severity": "critical"}, 2000, true},
			{"last hour: exactly 10,000", map[string]any{"lastSeenGTE": now.Add(-time.Hour).Format(time.RFC3339)}, 10000, true},
			{"three days: more than 10,000", map[string]any{"lastSeenGTE": now.Add(-72 * time.Hour).Format(time.RFC3339)}, 10001, false},
			{"two days ago only", map[string]any{"lastSeenLT": now.Add(-time.Hour).Format(time.RFC3339)}, 50, true},
			{"critical in the last hour", map[string]any{"severity": "critical", "lastSeenGTE": now.Add(-time.Hour).Format(time.RFC3339)}, 2000, true},
			{"address prefix", map[string]any{"sourceIPHasPrefix": "198.51.1."}, 250, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := env.GraphQL(ten.ReadOnly, q, map[string]any{"w": tc.where})
				if len(r.Errors) > 0 {
					t.Fatalf("GraphQL %d: %s", r.Status, r.Raw)
				}
				d := r.Data
				if got := ft.Dig(d, "sessions", "totalCount"); got != float64(tc.count) {
					t.Errorf("totalCount = %v, want %d", got, tc.count)
				}
				if got := ft.Dig(d, "sessions", "totalCountExact"); got != tc.exact {
					t.Errorf("totalCountExact = %v, want %v", got, tc.exact)
				}
				if edges, _ := ft.Dig(d, "sessions", "edges").([]any); len(edges) != 2 {
					t.Errorf("%d edges, want 2", len(edges))
				}
			})
		}
	})
}
