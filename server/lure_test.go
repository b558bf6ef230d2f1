package server_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// TestLureSnippet checks lureSnippet against the trap listener: the snippet is stable,
// its link is a CALLBACK_HIT attributed to the trap in the visitor's own session, without
// follow-up timing, and deactivating the trap revokes it. Another organization cannot ask for it.
func TestLureSnippet(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("a") // the only site: the trap listener routes every host to it
		trapID := env.CreateTrap(a.ReadWrite, "Quarterly report", "page")
		const q = `query($id: ID!) { lureSnippet(trapID: $id) { html url token } }`
		snip := func() map[string]any {
			s, _ := ft.Dig(env.MustGraphQL(a.ReadOnly, q, map[string]any{"id": trapID}), "lureSnippet").(map[string]any)
			return s
		}
		s := snip()
		html, link, token := s["html"].(string), s["url"].(string), s["token"].(string)
		if len(token) != 48 || !strings.Contains(link, "?ref="+token) || !strings.Contains(html, "<div hidden aria-hidden=\"true\"><a href=\""+link+"\"") {
			t.Fatalf("snippet %v", s)
		}
		if again := snip(); again["token"] != token {
			t.Errorf("the snippet changed: %v then %v", token, again["token"])
		}
		if r := env.GraphQL(a.ReadOnly, q, map[string]any{"id": "hit_01m817pg1f8bjdanzx5g71dpy4"}); r.Code() != "BAD_USER_INPUT" && r.Code() != "NOT_FOUND" {
			t.Errorf("a hit id: %s", r.Raw)
		}

		visit := func(ua string) {
			t.Helper()
			req, _ := http.NewRequest(http.MethodGet, env.Trap.URL+link, nil)
			req.Header.Set("User-Agent", ua)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		signals := func(ua string) (string, string) {
			t.Helper()
			d := env.MustGraphQL(a.ReadOnly, `query($ua: String) { sessions(first: 5, where: {userAgent: $ua}) { edges { node { id trapsTriggered } } } }`, map[string]any{"ua": ua})
			edges, _ := ft.Dig(d, "sessions", "edges").([]any)
			if len(edges) != 1 {
				all := env.MustGraphQL(a.ReadOnly, `{ sessions(first: 5) { edges { node { userAgent hitCount } } } }`, nil)
				t.Logf("%d sessions of %q; all: %v", len(edges), ua, all)
				return "", ""
			}
			id := ft.Dig(edges[0], "node", "id").(string)
			traps := fmt.Sprint(ft.Dig(edges[0], "node", "trapsTriggered"))
			det := env.MustGraphQL(a.ReadOnly, `query($id: ID!) { sessionDetail(id: $id) { signals { name placement delayMs } } }`, map[string]any{"id": id})
			return fmt.Sprint(ft.Dig(det, "sessionDetail", "signals")), traps
		}
		visit("snippet-reader/1.0")
		sigs, traps := signals("snippet-reader/1.0")
		if !strings.Contains(sigs, "CALLBACK_HIT") || !strings.Contains(sigs, "snippet#0") || strings.Contains(sigs, "SPEED_FOLLOWUP") {
			t.Errorf("signals %s: want CALLBACK_HIT at snippet#0 and no follow-up timing", sigs)
		}
		if !strings.Contains(traps, trapID) {
			t.Errorf("traps %s, want %s", traps, trapID)
		}

		env.MustGraphQL(a.ReadWrite, `mutation($id: ID!) { updateTrap(id: $id, input: {active: false}) { id } }`, map[string]any{"id": trapID})
		visit("late-reader/1.0")
		if sigs, _ := signals("late-reader/1.0"); strings.Contains(sigs, "CALLBACK_HIT") {
			t.Errorf("a deactivated trap's snippet still fired: %s", sigs)
		}
		other := env.Tenant("other")
		if r := env.GraphQL(other.ReadOnly, q, map[string]any{"id": trapID}); r.Code() != "NOT_FOUND" {
			t.Errorf("another organization's snippet: %s", r.Raw)
		}
	})
}
