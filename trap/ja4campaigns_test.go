package trap_test

// The JA4 campaigns (tally: Ja4Campaign and Ja4CampaignSession rows) equal a grouping of the
// stored hits by JA4 after visitors send hits from several TLS clients through the real
// listener and writer (their JA4 passed by a trusted CDN's header), over two rounds; the
// GraphQL list and the sessions filtered by a JA4 (GraphQL and REST) say the same; the
// upgrade's backfill rebuilds the same rows; the retention purge removes the memberships with
// their sessions and a campaign once nothing of it is stored.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/schematype"
	"github.com/flytrap/flytrap/ent/session"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/record"
	"github.com/flytrap/flytrap/retention"
	"github.com/flytrap/flytrap/server"
	counters "github.com/flytrap/flytrap/tally"
)

// clientJA4s are three TLS clients' JA4s (curl, Python requests, Chromium, as measured in
// fingerprint's tests).
var clientJA4s = []string{
	"t13d3112h2_e8f1e7e78f70_6bebaf5329ac",
	"t13d1812h1_85036bcba153_b26ce05bbdd6",
	"t13d1516h2_8daaf6152771_d8a2da3f94cd",
}

// ja4Mix sends n requests from workers goroutines: a visitor (one of 24, a session each, some
// sharing an address) sends its TLS client's JA4 in cf-ja4 (a third of them none: plain
// HTTP); now and then a visitor comes with another client, so a session joins two campaigns.
func ja4Mix(t *testing.T, trapURL string, paths []string, n, workers int, seed uint64) {
	t.Helper()
	client := trapClient(workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(seed, uint64(w)))
			for range n / workers {
				v := rnd.IntN(24)
				ua, ip := fmt.Sprintf("scanner-%d/2.0", v), fmt.Sprintf("198.18.4.%d", v%9+1)
				ja4 := ""
				if v%3 != 0 {
					ja4 = clientJA4s[v%len(clientJA4s)]
					if rnd.IntN(8) == 0 {
						ja4 = clientJA4s[rnd.IntN(len(clientJA4s))]
					}
				}
				req, _ := http.NewRequest(http.MethodGet, trapURL+paths[rnd.IntN(len(paths))], nil)
				req.Header.Set("User-Agent", ua)
				req.Header.Set("X-Forwarded-For", ip)
				if ja4 != "" {
					req.Header.Set("cf-ja4", ja4)
				}
				res, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		})
	}
	wg.Wait()
}

// checkJa4Campaigns fails unless the stored JA4 campaigns equal a grouping of the stored hits.
func checkJa4Campaigns(t *testing.T, c *ent.Client) *counters.Campaigns {
	t.Helper()
	stored, err := counters.StoredJa4Campaigns(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	recount, _, err := counters.RecountJa4Campaigns(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	if d := stored.Diff(recount); d != "" {
		t.Fatalf("stored JA4 campaigns vs a recount:\n%s", d)
	}
	return stored
}

func TestJa4CampaignsEqualRecount(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, trustLocalProxy, func(c *server.Config) { c.Trap.JA4Header = "cf-ja4" })
		tn := env.Tenant("acme")
		paths := []string{"/acme/tls/0", "/acme/tls/1", "/acme/nothing-here"}
		for _, p := range paths[:2] {
			env.MustGraphQL(tn.ReadWrite, `mutation($p: String!) { createTrap(input:{name:"t", type: page, path: $p}) { id } }`, map[string]any{"p": p})
		}
		c := env.DB.Client
		ctx := ft.System()

		// Two rounds: the second adds to rows the first wrote.
		ja4Mix(t, env.Trap.URL, paths, 120, 4, 1)
		first := checkJa4Campaigns(t, c)
		// A hit written after later hits of its session (ids are taken on arrival; hits are written
		// about, not exactly, in their order) lowers its membership's first hit.
		var mk counters.MemberKey
		for k := range first.Members {
			mk = k
			break
		}
		s := c.Session.GetX(ctx, mk.Session)
		at := s.FirstSeen.Add(-time.Second)
		early := ids.Format(ids.Hit, ulid.MustNew(ulid.Timestamp(at), ulid.DefaultEntropy()))
		if _, err := record.CreateHits(ctx, c, c.Hit.Create().SetID(early).SetOrgID(s.OrgID).SetSessionID(s.ID).SetMethod("GET").
			SetPath("/").SetSourceIP(s.SourceIP).SetReceivedAt(at).SetHeaders(schematype.Headers{}).SetJa4(first.Rows[mk.Campaign].Key)); err != nil {
			t.Fatal(err)
		}
		if got := checkJa4Campaigns(t, c).Members[mk].LastID; got != early {
			t.Fatalf("membership %v: first hit %s after an earlier hit %s was written", mk, got, early)
		}
		ja4Mix(t, env.Trap.URL, paths, 240, 6, 2)
		before := checkJa4Campaigns(t, c)
		if len(before.Rows) != len(clientJA4s) {
			t.Fatalf("%d JA4 campaigns, want %d: %v", len(before.Rows), len(clientJA4s), before.Rows)
		}
		grew, shared, twice := false, false, false
		for id, r := range before.Rows {
			grew = grew || r.Count > first.Rows[id].Count
			shared = shared || r.Sessions > 1
		}
		perSession := map[string]int{}
		for k := range before.Members {
			perSession[k.Session]++
			twice = twice || perSession[k.Session] > 1
		}
		if !grew || !shared || !twice {
			t.Fatalf("the mix made no growing or shared campaign, or no session in two: %v", before.Rows)
		}
		if c.Hit.Query().Where(hit.Ja4IsNil()).CountX(ctx) == 0 {
			t.Fatal("no plain-HTTP hit: the mix tests nothing of hits without a JA4")
		}

		// GraphQL's list: every campaign once, most recently active first, its counts as stored,
		// and its sessions and addresses those of its members.
		type node struct {
			ID           string   `json:"id"`
			JA4          string   `json:"ja4"`
			ClientStack  *string  `json:"clientStack"`
			SessionCount int64    `json:"sessionCount"`
			HitCount     int64    `json:"hitCount"`
			Addresses    []string `json:"addresses"`
			Sessions     []struct {
				ID string `json:"id"`
			} `json:"sessions"`
		}
		var got []node
		after := any(nil)
		for {
			data := env.MustGraphQL(tn.ReadOnly, `query($after: Cursor) { ja4Campaigns(first: 2, after: $after) {
				edges { cursor node { id ja4 clientStack sessionCount hitCount addresses sessions(first: 20) { id } } }
				pageInfo { hasNextPage endCursor } } }`, map[string]any{"after": after})
			var conn struct {
				Edges []struct {
					Node node `json:"node"`
				} `json:"edges"`
				PageInfo struct {
					HasNextPage bool   `json:"hasNextPage"`
					EndCursor   string `json:"endCursor"`
				} `json:"pageInfo"`
			}
			raw, _ := json.Marshal(data["ja4Campaigns"])
			if err := json.Unmarshal(raw, &conn); err != nil {
				t.Fatal(err)
			}
			for _, e := range conn.Edges {
				got = append(got, e.Node)
			}
			if !conn.PageInfo.HasNextPage {
				break
			}
			after = conn.PageInfo.EndCursor
		}
		if len(got) != len(before.Rows) {
			t.Fatalf("GraphQL listed %d JA4 campaigns, want %d", len(got), len(before.Rows))
		}
		for i, n := range got {
			row := before.Rows[n.ID]
			if want := map[string]string{clientJA4s[0]: "curl", clientJA4s[1]: "python", clientJA4s[2]: "chromium"}[n.JA4]; n.ClientStack == nil || *n.ClientStack != want {
				t.Errorf("campaign %s: client stack %v, want %s", n.JA4, n.ClientStack, want)
			}
			if row.Key != n.JA4 || row.Count != n.HitCount || row.Sessions != n.SessionCount {
				t.Errorf("campaign %s: listed %+v, stored %+v", n.ID, n, row)
			}
			if i > 0 && before.Rows[got[i-1].ID].LastID < row.LastID {
				t.Errorf("campaign %s listed after a less recently active one", n.ID)
			}
			var ips, sids []string
			for k, m := range before.Members {
				if k.Campaign == n.ID {
					sids = append(sids, k.Session)
					if !slices.Contains(ips, m.SourceIP) {
						ips = append(ips, m.SourceIP)
					}
				}
			}
			slices.Sort(ips)
			if !slices.Equal(n.Addresses, ips) {
				t.Errorf("campaign %s: addresses %v, want %v", n.ID, n.Addresses, ips)
			}
			if len(n.Sessions) != min(20, len(sids)) {
				t.Errorf("campaign %s: %d sessions listed of %d", n.ID, len(n.Sessions), len(sids))
			}
			for _, s := range n.Sessions {
				if !slices.Contains(sids, s.ID) {
					t.Errorf("campaign %s lists session %s, not a member", n.ID, s.ID)
				}
			}
		}

		// The sessions filtered by a JA4 are those with a stored hit from it, in GraphQL and REST.
		for _, ja4 := range append(slices.Clone(clientJA4s), "t13d0000h2_000000000000_000000000000") {
			want := c.Session.Query().Where(session.HasHitsWith(hit.Ja4(ja4))).Order(ent.Desc(session.FieldLastSeen), ent.Desc(session.FieldID)).IDsX(ctx)
			data := env.MustGraphQL(tn.ReadOnly, `query($j: String!) { sessions(first: 100, where: {hasHitsWith: [{ja4: $j}]}) { totalCount edges { node { id } } } }`,
				map[string]any{"j": ja4})
			raw, _ := json.Marshal(data["sessions"])
			var conn struct {
				TotalCount int `json:"totalCount"`
				Edges      []struct {
					Node struct {
						ID string `json:"id"`
					} `json:"node"`
				} `json:"edges"`
			}
			json.Unmarshal(raw, &conn)
			var gotIDs []string
			for _, e := range conn.Edges {
				gotIDs = append(gotIDs, e.Node.ID)
			}
			if !slices.Equal(gotIDs, want) || conn.TotalCount != len(want) {
				t.Errorf("GraphQL sessions with JA4 %s: %d %v, want %v", ja4, conn.TotalCount, gotIDs, want)
			}
			res, body := env.Get(tn.ReadOnly, "/dashboard/api/sessions?limit=100&ja4="+url.QueryEscape(ja4))
			var page struct {
				Data []struct {
					ID string `json:"id"`
				} `json:"data"`
			}
			json.Unmarshal(body, &page)
			gotIDs = gotIDs[:0]
			for _, s := range page.Data {
				gotIDs = append(gotIDs, s.ID)
			}
			if res.StatusCode != http.StatusOK || !slices.Equal(gotIDs, want) {
				t.Errorf("REST sessions with JA4 %s: %d %v, want %v", ja4, res.StatusCode, gotIDs, want)
			}
		}
		if res, body := env.Get(tn.ReadOnly, "/dashboard/api/sessions?ja4=curl"); res.StatusCode != http.StatusBadRequest {
			t.Errorf("a JA4 of the wrong shape: %d %s", res.StatusCode, body)
		}
		// Another organization sees none of them.
		other := env.Tenant("globex")
		if data := env.MustGraphQL(other.ReadOnly, `{ ja4Campaigns { edges { cursor } } }`, nil); len(data["ja4Campaigns"].(map[string]any)["edges"].([]any)) != 0 {
			t.Errorf("another organization lists JA4 campaigns: %v", data)
		}

		// The backfill of an upgraded database rebuilds the same rows from the stored hits, once.
		c.Ja4CampaignSession.Delete().ExecX(ctx)
		c.Ja4Campaign.Delete().ExecX(ctx)
		c.ExecContext(ctx, "DELETE FROM flytrap_upgrades WHERE name = 'ja4-campaigns-backfill-1'")
		if done, err := counters.BackfillJa4Campaigns(ctx, c); err != nil || !done {
			t.Fatalf("backfill: %v %v", done, err)
		}
		filled := checkJa4Campaigns(t, c)
		if d := filled.Diff(before); d != "" {
			t.Errorf("backfilled JA4 campaigns vs the maintained ones:\n%s", d)
		}

		// The retention purge deletes the sessions' memberships with them; the counts stay while
		// the campaign's last hit is within --retain-hits (longer than the sessions' here).
		cfg := retention.DefaultConfig()
		cfg.Pause, cfg.Hits = 0, 200*retention.Day
		later := func() time.Time { return time.Now().Add(100 * retention.Day) }
		purge := func(cfg retention.Config) retention.Result {
			t.Helper()
			res, err := retention.New(env.DB.SQL, env.DB.Dialect, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), later).Purge(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		purge(cfg)
		purged, err := counters.StoredJa4Campaigns(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		if n := c.Session.Query().CountX(ctx); n != 0 || len(purged.Members) != 0 {
			t.Fatalf("after the purge: %d sessions, %d memberships", n, len(purged.Members))
		}
		if d := (&counters.Campaigns{Rows: purged.Rows}).Diff(&counters.Campaigns{Rows: before.Rows}); d != "" {
			t.Errorf("the purge changed the JA4 campaigns' counts:\n%s", d)
		}
		// Once their last hits are past --retain-hits too, nothing of them is stored: they go.
		cfg.Hits = retention.DefaultConfig().Hits
		if res := purge(cfg); res.Ja4Campaigns != int64(len(before.Rows)) || c.Ja4Campaign.Query().CountX(ctx) != 0 {
			t.Fatalf("the second purge deleted %d of %d JA4 campaigns", res.Ja4Campaigns, len(before.Rows))
		}
	})
}
