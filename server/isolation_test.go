package server_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/flytrap/flytrap/ent"
	entkey "github.com/flytrap/flytrap/ent/apikey"
	entevent "github.com/flytrap/flytrap/ent/event"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/session"
	entsite "github.com/flytrap/flytrap/ent/site"
	enttrap "github.com/flytrap/flytrap/ent/trap"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// TestTenantIsolation proves that organization B, even with an admin key, can
// neither see nor change anything of organization A, through any query,
// mutation or node lookup, and that A's ids are "not found" to B, never "forbidden".
func TestTenantIsolation(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		sys := ft.System()
		a := env.Tenant("alpha")
		bt := env.Tenant("beta")

		// A's data: traps through the API, a second (deletable) site, sessions, hits and events.
		var aTraps []string
		for _, in := range []map[string]any{
			{"name": "A docs", "type": "page", "path": "/shared/path"},
			{"name": "A api", "type": "api"},
			{"name": "A llms", "type": "llms_txt", "active": false},
		} {
			aTraps = append(aTraps, str(createTrap(t, env, a.ReadWrite, in)["id"]))
		}
		aSpare := str(ft.Dig(env.MustGraphQL(a.Admin, `mutation { createSite(input: {name: "A spare", host: "spare.alpha.example"}) { id } }`, nil), "createSite", "id"))
		now := time.Now()
		var aSessions []string
		var aHits []string
		for i, class := range []session.Classification{session.ClassificationAI_AGENT_MALICIOUS, session.ClassificationAI_AGENT} {
			s := seedSession(t, env, a.Org.ID, func(c *ent.SessionCreate) {
				c.SetClassification(class).SetSeverity(session.SeverityCritical).SetScore(95).
					SetTripwiresFired(4).SetPromptsCaptured(1).SetSiteID(a.Site.ID).SetTrapsTriggered([]string{aTraps[i]})
			})
			aSessions = append(aSessions, s.ID)
			for _, h := range seedHits(t, env, s, aTraps[i], now.Add(-time.Minute), now.Add(-2*time.Hour)) {
				aHits = append(aHits, h.ID)
			}
		}
		aEvents, err := env.DB.Client.Event.Query().Where(entevent.OrgID(a.Org.ID)).IDs(sys)
		if err != nil || len(aEvents) != 3 {
			t.Fatalf("A's events: %v (err %v), want 3", aEvents, err)
		}
		aKeys, err := env.DB.Client.APIKey.Query().Where(entkey.OrgID(a.Org.ID)).IDs(sys)
		if err != nil || len(aKeys) != 3 {
			t.Fatalf("A's keys: %v (err %v)", aKeys, err)
		}

		// B has a little data of its own, so "B's only" is not trivially "nothing";
		// its trap uses the path of one of A's, which another organization may.
		bTrap := str(createTrap(t, env, bt.ReadWrite, map[string]any{"name": "B docs", "type": "page", "path": "/shared/path"})["id"])

		aIDs := map[string][]string{
			"organization": {a.Org.ID},
			"site":         {a.Site.ID, aSpare},
			"trap":         aTraps,
			"session":      aSessions,
			"hit":          aHits,
			"event":        aEvents,
			"apiKey":       aKeys,
		}
		var allA []string
		for _, ids := range aIDs {
			allA = append(allA, ids...)
		}

		// A snapshot of A's rows, compared after B has tried everything.
		type snapshot struct {
			traps    []*ent.Trap
			sites    []*ent.Site
			keys     []*ent.APIKey
			org      *ent.Organization
			events   int
			sessions int
			hits     int
		}
		snap := func(t *testing.T) snapshot {
			t.Helper()
			var s snapshot
			var err error
			c := env.DB.Client
			if s.traps, err = c.Trap.Query().Where(enttrap.OrgID(a.Org.ID)).Order(enttrap.ByID()).All(sys); err != nil {
				t.Fatal(err)
			}
			if s.sites, err = c.Site.Query().Where(entsite.OrgID(a.Org.ID)).Order(entsite.ByID()).All(sys); err != nil {
				t.Fatal(err)
			}
			if s.keys, err = c.APIKey.Query().Where(entkey.OrgID(a.Org.ID)).Order(entkey.ByID()).All(sys); err != nil {
				t.Fatal(err)
			}
			if s.org, err = c.Organization.Get(sys, a.Org.ID); err != nil {
				t.Fatal(err)
			}
			if s.events, err = c.Event.Query().Where(entevent.OrgID(a.Org.ID)).Count(sys); err != nil {
				t.Fatal(err)
			}
			if s.sessions, err = c.Session.Query().Where(session.OrgID(a.Org.ID)).Count(sys); err != nil {
				t.Fatal(err)
			}
			if s.hits, err = c.Hit.Query().Where(hit.OrgID(a.Org.ID)).Count(sys); err != nil {
				t.Fatal(err)
			}
			return s
		}
		before := snap(t)

		t.Run("lists and counts hold B's rows only", func(t *testing.T) {
			aWhere := map[string]any{"idIn": allA}
			tests := []struct {
				name, query string
				vars        map[string]any
				field       string
				want        []string
			}{
				{"traps", `{ traps(first: 100) { totalCount edges { node { id } } } }`, nil, "traps", []string{bTrap}},
				{"traps where A's ids", `query($w: TrapWhereInput) { traps(where: $w) { totalCount edges { node { id } } } }`, map[string]any{"w": aWhere}, "traps", nil},
				{"traps where A's path", `{ traps(where: {path: "/shared/path"}) { totalCount edges { node { id } } } }`, nil, "traps", []string{bTrap}},
				{"sessions", `{ sessions(first: 100) { totalCount edges { node { id } } } }`, nil, "sessions", nil},
				{"sessions where A's ids", `query($w: SessionWhereInput) { sessions(where: $w) { totalCount edges { node { id } } } }`, map[string]any{"w": aWhere}, "sessions", nil},
				{"sessions with A's hits", `query($ids: [ID!]) { sessions(where: {hasHitsWith: [{idIn: $ids}]}) { totalCount edges { node { id } } } }`, map[string]any{"ids": aHits}, "sessions", nil},
				{"apiKeys", `{ apiKeys(first: 100) { totalCount edges { node { id } } } }`, nil, "apiKeys", nil},
				{"sites", `{ sites(first: 100) { totalCount edges { node { id } } } }`, nil, "sites", []string{bt.Site.ID}},
				{"sites where A's ids", `query($w: SiteWhereInput) { sites(where: $w) { totalCount edges { node { id } } } }`, map[string]any{"w": aWhere}, "sites", nil},
			}
			bKeys, err := env.DB.Client.APIKey.Query().Where(entkey.OrgID(bt.Org.ID)).IDs(sys)
			if err != nil {
				t.Fatal(err)
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					want := tt.want
					if tt.name == "apiKeys" {
						want = bKeys
					}
					d := env.MustGraphQL(bt.Admin, tt.query, tt.vars)
					got := nodeIDs(d[tt.field])
					slices.Sort(got)
					want = slices.Sorted(slices.Values(want))
					if !slices.Equal(got, want) || num(ft.Dig(d, tt.field, "totalCount")) != len(want) {
						t.Fatalf("B sees %v (totalCount %v), want %v", got, ft.Dig(d, tt.field, "totalCount"), want)
					}
				})
			}

			t.Run("events", func(t *testing.T) {
				d := env.MustGraphQL(bt.ReadOnly, `{ events(first: 100) { totalCount edges { node { id orgID data } } } }`, nil)
				evs := nodes(d["events"])
				if len(evs) != 1 || num(ft.Dig(d, "events", "totalCount")) != 1 {
					t.Fatalf("B sees %d events (totalCount %v), want its 1", len(evs), ft.Dig(d, "events", "totalCount"))
				}
				if evs[0]["orgID"] != bt.Org.ID || ft.Dig(evs[0], "data", "id") != bTrap {
					t.Fatalf("B's event = %v", evs[0])
				}
			})

			t.Run("organization is B's own", func(t *testing.T) {
				d := env.MustGraphQL(bt.ReadOnly, `{ organization { id name } }`, nil)
				if ft.Dig(d, "organization", "id") != bt.Org.ID || ft.Dig(d, "organization", "name") != "beta" {
					t.Fatalf("organization = %v", d)
				}
			})

			t.Run("analytics ignore A's data", func(t *testing.T) {
				d := env.MustGraphQL(bt.ReadOnly, `{ analytics { overview { totalHits24h agentsDetected tripwiresFired promptsCaptured activeTraps }
					severity { critical high medium low } timeline { hits } } }`, nil)
				want := map[string]int{"totalHits24h": 0, "agentsDetected": 0, "tripwiresFired": 0, "promptsCaptured": 0, "activeTraps": 1}
				for k, v := range want {
					if n := num(ft.Dig(d, "analytics", "overview", k)); n != v {
						t.Errorf("B's overview.%s = %d, want %d", k, n, v)
					}
				}
				for _, k := range []string{"critical", "high", "medium", "low"} {
					if n := num(ft.Dig(d, "analytics", "severity", k)); n != 0 {
						t.Errorf("B's severity.%s = %d, want 0", k, n)
					}
				}
				buckets, _ := ft.Dig(d, "analytics", "timeline").([]any)
				for i, bk := range buckets {
					if n := num(ft.Dig(bk, "hits")); n != 0 {
						t.Errorf("B's timeline bucket %d = %d, want 0", i, n)
					}
				}
				// A's own figures do see A's data (the seeding is not a no-op).
				da := env.MustGraphQL(a.ReadOnly, `{ analytics { overview { totalHits24h agentsDetected } } }`, nil)
				if num(ft.Dig(da, "analytics", "overview", "totalHits24h")) != len(aHits) || num(ft.Dig(da, "analytics", "overview", "agentsDetected")) != 2 {
					t.Errorf("A's own overview = %v", da)
				}
			})
		})

		t.Run("node lookups of A's ids are not found", func(t *testing.T) {
			keys := map[string]string{"admin": bt.Admin, "read-only": bt.ReadOnly}
			for kind, ids := range aIDs {
				for who, tok := range keys {
					if kind == "apiKey" && who == "read-only" {
						continue // a read-only key may not look at keys at all, its own included
					}
					for _, id := range ids {
						t.Run(kind+"/"+who, func(t *testing.T) {
							r := env.GraphQL(tok, `query($id: ID!) { node(id: $id) { id __typename } }`, map[string]any{"id": id})
							if r.Status != http.StatusOK || ft.Dig(r.Data, "node") != nil {
								t.Fatalf("B got A's %s %s: %s", kind, id, r.Raw)
							}
							if c := r.Code(); c != "" && c != server.CodeNotFound {
								t.Fatalf("node(%s) code %q, want NOT_FOUND (never FORBIDDEN): %s", id, c, r.Raw)
							}
						})
					}
				}
			}

			t.Run("nodes", func(t *testing.T) {
				ids := append(slices.Clone(allA), bTrap)
				r := env.GraphQL(bt.Admin, `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, map[string]any{"ids": ids})
				if r.Status != http.StatusOK {
					t.Fatalf("nodes: HTTP %d: %s", r.Status, r.Raw)
				}
				list, _ := ft.Dig(r.Data, "nodes").([]any)
				if len(list) != len(ids) {
					t.Fatalf("nodes returned %d entries for %d ids: %s", len(list), len(ids), r.Raw)
				}
				for i, n := range list[:len(allA)] {
					if n != nil {
						t.Errorf("nodes[%d] (%s) = %v, want null", i, ids[i], n)
					}
				}
				if ft.Dig(list[len(allA)], "id") != bTrap {
					t.Errorf("B's own trap in nodes = %v", list[len(allA)])
				}
				if len(r.Errors) != len(allA) {
					t.Errorf("%d errors for %d foreign ids: %s", len(r.Errors), len(allA), r.Raw)
				}
				for _, e := range r.Errors {
					if c, _ := e.Extensions["code"].(string); c != server.CodeNotFound {
						t.Errorf("nodes error code %q, want NOT_FOUND: %v", c, e)
					}
				}
			})

			t.Run("a trap's site cannot be A's", func(t *testing.T) {
				d := env.MustGraphQL(bt.ReadOnly, `{ traps { edges { node { siteID site { id } } } } }`, nil)
				if ft.Dig(nodes(d["traps"])[0], "site", "id") != bt.Site.ID {
					t.Fatalf("B's trap site = %v", d)
				}
			})
		})

		t.Run("mutations on A's ids are not found", func(t *testing.T) {
			tests := []struct {
				name, query string
				ids         []string
			}{
				{"updateTrap", `mutation($id: ID!) { updateTrap(id: $id, input: {name: "pwned", description: "x", active: false}) { id } }`, aTraps},
				{"deleteTrap", `mutation($id: ID!) { deleteTrap(id: $id) { id deleted } }`, aTraps},
				{"revokeApiKey", `mutation($id: ID!) { revokeApiKey(id: $id) { id revokedAt } }`, aKeys},
				{"updateSite", `mutation($id: ID!) { updateSite(id: $id, input: {name: "pwned", clearHost: true}) { id } }`, []string{a.Site.ID, aSpare}},
				{"deleteSite", `mutation($id: ID!) { deleteSite(id: $id) { id deleted } }`, []string{a.Site.ID, aSpare}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					for _, id := range tt.ids {
						r := env.GraphQL(bt.Admin, tt.query, map[string]any{"id": id})
						wantCode(t, r, server.CodeNotFound)
						if r.Data != nil {
							for _, v := range r.Data {
								if v != nil {
									t.Fatalf("%s(%s) returned data: %s", tt.name, id, r.Raw)
								}
							}
						}
					}
				})
			}

			t.Run("createTrap on A's site", func(t *testing.T) {
				for _, site := range []string{a.Site.ID, aSpare} {
					r := env.GraphQL(bt.Admin, `mutation($in: CreateTrapInput!) { createTrap(input: $in) { id siteID } }`,
						map[string]any{"in": map[string]any{"name": "sneaky", "type": "page", "path": "/sneaky", "siteID": site}})
					wantCode(t, r, server.CodeBadUserInput)
					if f, _ := r.Errors[0].Extensions["field"].(string); f != "siteID" {
						t.Errorf("createTrap on A's site: field %q, want siteID: %s", f, r.Raw)
					}
				}
				n, err := env.DB.Client.Trap.Query().Where(enttrap.Name("sneaky")).Count(sys)
				if err != nil || n != 0 {
					t.Fatalf("%d sneaky traps exist (err %v)", n, err)
				}
			})

			t.Run("A's host is neither revealed nor taken", func(t *testing.T) {
				// Hosts are unique per organization: B naming A's host is no clash (which would
				// tell B that A has it), and it routes nothing until the operator verifies it.
				d := env.MustGraphQL(bt.Admin, `mutation { createSite(input: {name: "mine", host: "spare.alpha.example"}) { id hostVerified } }`, nil)
				if ft.Dig(d, "createSite", "hostVerified") != false {
					t.Fatalf("createSite = %v", d)
				}
				wantCode(t, env.GraphQL(bt.Admin, `mutation { createSite(input: {name: "mine again", host: "spare.alpha.example"}) { id } }`, nil), server.CodeConflict)
				bSite := str(ft.Dig(d, "createSite", "id"))
				if err := env.DB.Client.Site.DeleteOneID(bSite).Exec(sys); err != nil {
					t.Fatal(err)
				}
			})

			t.Run("updateOrganization renames B only", func(t *testing.T) {
				d := env.MustGraphQL(bt.Admin, `mutation { updateOrganization(input: {name: "beta renamed"}) { id name } }`, nil)
				if ft.Dig(d, "updateOrganization", "id") != bt.Org.ID || ft.Dig(d, "updateOrganization", "name") != "beta renamed" {
					t.Fatalf("updateOrganization = %v", d)
				}
			})

			t.Run("A's rows are unchanged", func(t *testing.T) {
				after := snap(t)
				eq := func(what string, x, y any) {
					t.Helper()
					if !sameJSON(x, y) {
						t.Errorf("A's %s changed:\nbefore %v\nafter  %v", what, x, y)
					}
				}
				eq("traps", before.traps, after.traps)
				eq("sites", before.sites, after.sites)
				eq("keys", before.keys, after.keys)
				eq("organization", before.org, after.org)
				eq("event count", before.events, after.events)
				eq("session count", before.sessions, after.sessions)
				eq("hit count", before.hits, after.hits)
				for _, k := range after.keys {
					if k.RevokedAt != nil {
						t.Errorf("A's key %s was revoked", k.ID)
					}
				}
				// And A's keys still work, seeing all of A's traps.
				d := env.MustGraphQL(a.ReadOnly, `{ traps { totalCount } }`, nil)
				if num(ft.Dig(d, "traps", "totalCount")) != len(aTraps) {
					t.Errorf("A sees %v traps, want %d", ft.Dig(d, "traps", "totalCount"), len(aTraps))
				}
			})
		})

		t.Run("event positions do not count A's events", func(t *testing.T) {
			// B, A, B: if positions come from one counter for every organization, B's two
			// events are two apart and B learns that A wrote one in between.
			createTrap(t, env, bt.ReadWrite, map[string]any{"name": "B 1", "type": "api"})
			createTrap(t, env, a.ReadWrite, map[string]any{"name": "A between", "type": "api"})
			createTrap(t, env, bt.ReadWrite, map[string]any{"name": "B 2", "type": "api"})
			d := env.MustGraphQL(bt.ReadOnly, `{ events(last: 2) { edges { node { position data } } } }`, nil)
			evs := nodes(d["events"])
			if len(evs) != 2 || ft.Dig(evs[1], "data", "name") != "B 2" {
				t.Fatalf("B's last events: %v", evs)
			}
			if gap := num(evs[1]["position"]) - num(evs[0]["position"]); gap != 1 {
				t.Fatalf("B's consecutive events are %d positions apart: the gap counts other organizations' events", gap)
			}
		})
	})
}
