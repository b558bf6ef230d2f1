package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/flytrap/flytrap/ent"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
	"github.com/flytrap/flytrap/viewer"
)

// A site's host is a tenant's claim, unique per organization, and routes trap traffic only
// once the operator verified it: naming another tenant's host neither reveals it (no clash)
// nor takes its visitors (no route), and a verified host routes to one site.
func TestSiteHostOwnership(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		sys := ft.System()
		a, bt := env.Tenant("alpha"), env.Tenant("beta")
		const host = "shop.example.com"
		createSite := func(tn ft.Tenant) string {
			t.Helper()
			d := env.MustGraphQL(tn.Admin, `mutation($h: String!) { createSite(input: {name: "shop", host: $h}) { id host hostVerified } }`, map[string]any{"h": host})
			if ft.Dig(d, "createSite", "hostVerified") != false || ft.Dig(d, "createSite", "host") != host {
				t.Fatalf("createSite = %v", d)
			}
			return str(ft.Dig(d, "createSite", "id"))
		}
		aSite := createSite(a)
		bSite := createSite(bt) // no conflict: nothing tells B that A has the name
		wantCode(t, env.GraphQL(bt.Admin, `mutation { createSite(input: {name: "again", host: "shop.example.com"}) { id } }`, nil), server.CodeConflict)

		trapOn := func(tn ft.Tenant, site, path string) {
			t.Helper()
			createTrap(t, env, tn.ReadWrite, map[string]any{"name": "decoy " + path, "type": "page", "path": path, "siteID": site})
		}
		trapOn(a, aSite, "/a-only")
		trapOn(bt, bSite, "/b-only")
		visit := func(path string) int {
			t.Helper()
			req, _ := http.NewRequest(http.MethodGet, env.Trap.URL+path, nil)
			req.Host = host
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			return res.StatusCode
		}
		// Unverified, the host routes to neither organization.
		if sa, sb := visit("/a-only"), visit("/b-only"); sa != http.StatusNotFound || sb != http.StatusNotFound {
			t.Fatalf("unverified host routed: A's trap %d, B's trap %d", sa, sb)
		}

		// A tenant cannot verify its own host: not in the API, refused by the storage.
		if r := env.GraphQL(bt.Admin, `mutation($id: ID!) { updateSite(id: $id, input: {hostVerified: true}) { id } }`, map[string]any{"id": bSite}); r.Code() == "" {
			t.Fatalf("updateSite hostVerified: %s", r.Raw)
		}
		tenant := viewer.NewContext(context.Background(), viewer.Viewer{OrgID: bt.Org.ID, Scope: viewer.Admin})
		if err := env.DB.Client.Site.UpdateOneID(bSite).SetHostVerified(true).Exec(tenant); err == nil {
			t.Fatal("a tenant verified its own host")
		}

		// The operator verifies A's: the host routes to A's site alone.
		env.DB.Client.Site.UpdateOneID(aSite).SetHostVerified(true).ExecX(sys)
		if sa, sb := visit("/a-only"), visit("/b-only"); sa != http.StatusOK || sb != http.StatusNotFound {
			t.Fatalf("verified for A: A's trap %d, B's trap %d", sa, sb)
		}
		// One verified site per host, whatever the order of the operator's commands.
		if err := env.DB.Client.Site.UpdateOneID(bSite).SetHostVerified(true).Exec(sys); !ent.IsConstraintError(err) {
			t.Fatalf("second verified site for one host: %v", err)
		}
		d := env.MustGraphQL(a.ReadOnly, `query { sites(first: 10) { edges { node { id hostVerified } } } }`, nil)
		verified := map[string]bool{}
		for i := range 2 {
			verified[str(ft.Dig(d, "sites", "edges", i, "node", "id"))] = ft.Dig(d, "sites", "edges", i, "node", "hostVerified") == true
		}
		if !verified[aSite] || verified[a.Site.ID] {
			t.Fatalf("A's sites: %v", d)
		}

		// Changing the host drops the verification; setting the same host keeps it.
		env.MustGraphQL(a.Admin, `mutation($id: ID!) { updateSite(id: $id, input: {name: "renamed", host: "shop.example.com"}) { id } }`, map[string]any{"id": aSite})
		if !env.DB.Client.Site.GetX(sys, aSite).HostVerified {
			t.Fatal("an unchanged host lost its verification")
		}
		d = env.MustGraphQL(a.Admin, `mutation($id: ID!) { updateSite(id: $id, input: {host: "other.example.com"}) { hostVerified } }`, map[string]any{"id": aSite})
		if ft.Dig(d, "updateSite", "hostVerified") != false {
			t.Fatalf("a changed host kept its verification: %v", d)
		}
		if s := visit("/a-only"); s != http.StatusNotFound {
			t.Fatalf("after the change, the old host still routes: %d", s)
		}
	})
}
