package server_test

import (
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/flytrap/flytrap/decoy"
	entkey "github.com/flytrap/flytrap/ent/apikey"
	"github.com/flytrap/flytrap/ent/hit"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/viewer"
)

// TestViewer checks that viewer names the caller's organization, scope and key, for each scope.
func TestViewer(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("alpha")
		for _, s := range []viewer.Scope{viewer.ReadOnly, viewer.ReadWrite, viewer.Admin} {
			keyID, err := env.DB.Client.APIKey.Query().Where(entkey.OrgID(a.Org.ID), entkey.ScopeEQ(s)).OnlyID(ft.System())
			if err != nil {
				t.Fatal(err)
			}
			d := env.MustGraphQL(a.Key(s), `{ viewer { orgID scope keyID subject } }`, nil)
			v, _ := ft.Dig(d, "viewer").(map[string]any)
			if str(v["orgID"]) != a.Org.ID || str(v["scope"]) != string(s) || str(v["keyID"]) != keyID || v["subject"] != nil {
				t.Errorf("%s: viewer = %v, want org %s, key %s, no subject", s, v, a.Org.ID, keyID)
			}
		}
		if r := env.GraphQL("", `{ viewer { orgID } }`, nil); r.Code() != "UNAUTHENTICATED" {
			t.Errorf("without a key: %d %s", r.Status, r.Raw)
		}
	})
}

// TestTrapPreview checks that trapPreview renders the decoy the listener serves,
// records nothing, carries only inert tokens, and keeps to the caller's organization.
func TestTrapPreview(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		sys := ft.System()
		a := env.Tenant("alpha")
		bt := env.Tenant("beta")
		// Two organizations: the listener routes by host, and the preview renders for the site's host.
		if _, err := env.DB.Client.Site.UpdateOne(a.Site).SetHost("alpha.example").SetHostVerified(true).Save(sys); err != nil {
			t.Fatal(err)
		}
		// The preview is what a visitor gets: the public title, escaped, never the (private) name.
		const name = `Payroll <b>"exports"</b> & co`
		const private = "Zebulon private payroll name"
		page := str(createTrap(t, env, a.ReadWrite, map[string]any{"name": private, "publicTitle": name, "type": "page", "path": "/internal/payroll"})["id"])
		mcp := str(createTrap(t, env, a.ReadWrite, map[string]any{"name": "Tools", "type": "mcp", "path": "/mcp"})["id"])
		api := str(createTrap(t, env, a.ReadWrite, map[string]any{"name": "Orders API", "type": "api", "path": "/api/v1/orders"})["id"])
		bTrap := str(createTrap(t, env, bt.ReadWrite, map[string]any{"name": "B docs", "type": "page", "path": "/b"})["id"])

		countRows := func() (hits, sessions int) {
			t.Helper()
			h, err := env.DB.Client.Hit.Query().Count(sys)
			if err != nil {
				t.Fatal(err)
			}
			s, err := env.DB.Client.Session.Query().Count(sys)
			if err != nil {
				t.Fatal(err)
			}
			return h, s
		}
		hits0, sessions0 := countRows()

		const q = `query($id: ID!) { trapPreview(id: $id) { status contentType body path publicTitle publicTitleGenerated } }`
		preview := func(token, id string) map[string]any {
			t.Helper()
			p, _ := ft.Dig(env.MustGraphQL(token, q, map[string]any{"id": id}), "trapPreview").(map[string]any)
			return p
		}
		p := preview(a.ReadOnly, page)
		body := str(p["body"])
		if num(p["status"]) != 200 || !strings.HasPrefix(str(p["contentType"]), "text/html") || str(p["path"]) != "/internal/payroll" {
			t.Errorf("page preview: status %v, content type %v, path %v", p["status"], p["contentType"], p["path"])
		}
		if !strings.Contains(body, html.EscapeString(name)) || strings.Contains(body, "<b>") || strings.Contains(body, private) {
			t.Errorf("page preview does not carry the trap's public title escaped, or carries its name: %.400s", body)
		}
		if p["publicTitle"] != name || p["publicTitleGenerated"] != false {
			t.Errorf("page preview's title: %v (generated %v)", p["publicTitle"], p["publicTitleGenerated"])
		}
		if p := preview(a.ReadOnly, api); p["publicTitleGenerated"] != true || str(p["publicTitle"]) == "" || strings.Contains(str(p["body"]), "Orders API") {
			t.Errorf("api preview: generated title %v (%v), or the name in its body", p["publicTitle"], p["publicTitleGenerated"])
		}
		// Its tokens are ours but name a hit that is never stored.
		refs := decoy.FindTokens(env.Server.Engine().Key(), body)
		if len(refs) == 0 {
			t.Errorf("page preview carries no tokens")
		}
		for _, ref := range refs {
			if n, err := env.DB.Client.Hit.Query().Where(hit.ID(ref.HitID)).Count(sys); err != nil || n != 0 {
				t.Errorf("token of hit %s: %d rows (err %v)", ref.HitID, n, err)
			}
		}

		if h, s := countRows(); h != hits0 || s != sessions0 {
			t.Errorf("the preview recorded rows: hits %d → %d, sessions %d → %d", hits0, h, sessions0, s)
		}

		// The same status and content type as the listener's answer to a visitor.
		req, err := http.NewRequest(http.MethodGet, env.Trap.URL+"/internal/payroll", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "alpha.example"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != num(p["status"]) || resp.Header.Get("Content-Type") != str(p["contentType"]) {
			t.Errorf("listener answered %d %q, preview %v %v", resp.StatusCode, resp.Header.Get("Content-Type"), p["status"], p["contentType"])
		}
		hits1, sessions1 := countRows()

		for _, id := range []string{mcp, api} {
			p := preview(a.Admin, id)
			if num(p["status"]) != 200 || str(p["body"]) == "" || str(p["contentType"]) == "" {
				t.Errorf("preview of %s: %v", id, p)
			}
		}
		preview(a.ReadWrite, page)
		if h, s := countRows(); h != hits1 || s != sessions1 {
			t.Errorf("previews recorded rows: hits %d → %d, sessions %d → %d", hits1, h, sessions1, s)
		}
		if hits1 != hits0+1 || sessions1 != sessions0+1 {
			t.Errorf("the visitor's request recorded %d hits and %d sessions, want 1 each", hits1-hits0, sessions1-sessions0)
		}

		// Another organization's trap is not found, even to an admin; a malformed id is bad input.
		for _, c := range []struct{ token, id, code string }{
			{bt.Admin, page, "NOT_FOUND"},
			{a.Admin, bTrap, "NOT_FOUND"},
			{a.ReadOnly, "trp_nope", "BAD_USER_INPUT"},
			{a.ReadOnly, a.Site.ID, "BAD_USER_INPUT"},
			{a.ReadOnly, "", "BAD_USER_INPUT"},
			{"", page, "UNAUTHENTICATED"},
		} {
			if r := env.GraphQL(c.token, q, map[string]any{"id": c.id}); r.Code() != c.code || r.Data["trapPreview"] != nil {
				t.Errorf("trapPreview(%q): %d %s, want %s", c.id, r.Status, r.Raw, c.code)
			}
		}
		if h, s := countRows(); h != hits1 || s != sessions1 {
			t.Errorf("refused previews recorded rows: hits %d, sessions %d", h-hits1, s-sessions1)
		}
	})
}
