package trap_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// One story about a proxy catch: an agent reads a page of the customer's site behind the
// lure proxy and follows a lure. The hit carries CALLBACK_HIT (what the dashboard's
// callbacks list shows), the firing's placement is the lure's and is named as one, in the
// signal, in its group and in REST, and the evidence names the page that carried it —
// known to the engine that served it, or from a Referer the token confirms.
func TestProxyCatchTellsOneStory(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, "<!DOCTYPE html>\n<html><head><title>Shop</title></head>\n<body>\n<h1>Pricing</h1>\n</body>\n</html>\n")
		}))
		t.Cleanup(upstream.Close)
		u, _ := url.Parse(upstream.URL)
		env := ft.Start(t, b, func(c *server.Config) { c.Proxy.Upstream = u })
		a := env.Tenant("shop")
		env.MustGraphQL(a.ReadWrite, `mutation { createTrap(input: {name: "Engineering wiki", type: page, path: "/internal/wiki"}) { id } }`, nil)

		get := func(path, ua string, hdr ...string) string {
			t.Helper()
			req, _ := http.NewRequest(http.MethodGet, env.Trap.URL+path, nil)
			req.Header.Set("User-Agent", ua)
			for i := 0; i+1 < len(hdr); i += 2 {
				req.Header.Set(hdr[i], hdr[i+1])
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			return string(body)
		}
		lureLink := regexp.MustCompile(`/internal/wiki\?ref=[a-z0-9]+`)

		for _, c := range []struct {
			name, ua, page string
			referer        bool // the follow-up names the page; else the engine remembers it
		}{
			{"an HTTP client, no Referer", "python-httpx/0.27", "/pricing", false},
			{"a browser-driven agent with a Referer", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/126.0 Safari/537.36", "/docs/plans", true},
		} {
			t.Run(c.name, func(t *testing.T) {
				page := get(c.page, c.ua)
				link := lureLink.FindString(page)
				if link == "" {
					t.Fatalf("no lure in the page:\n%s", page)
				}
				if c.referer {
					// A lure of another page, with that other page as Referer: the token's
					// page tag confirms a Referer, so a false one is not believed.
					other := lureLink.FindString(get("/elsewhere", c.ua))
					get(other, c.ua, "Referer", env.Trap.URL+"/pricing")
				}
				hdr := []string{}
				if c.referer {
					hdr = []string{"Referer", env.Trap.URL + c.page}
				}
				get(link, c.ua, hdr...)

				var session string
				for range 100 {
					d := env.MustGraphQL(a.ReadOnly, `query($ua: String!) { sessions(first: 5, where: {userAgent: $ua}) { edges { node { id } } } }`, map[string]any{"ua": c.ua})
					if edges, _ := ft.Dig(d, "sessions", "edges").([]any); len(edges) > 0 {
						session, _ = ft.Dig(edges[0], "node", "id").(string)
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				if session == "" {
					t.Fatal("no session recorded")
				}
				d := env.MustGraphQL(a.ReadOnly, `query($id: ID!) {
					sessionDetail(id: $id) { hits { id kind path signals } signals { name hitID placement placementLabel lure detail } }
					node(id: $id) { ... on Session { signalGroups { signal placement placementLabel evidence } } } }`, map[string]any{"id": session})
				var out struct {
					SessionDetail struct {
						Hits []struct {
							ID, Kind, Path string
							Signals        []string
						}
						Signals []struct {
							Name, HitID, Placement, PlacementLabel, Detail string
							Lure                                           bool
						}
					}
					Node struct {
						SignalGroups []struct {
							Signal, Placement, PlacementLabel string
							Evidence                          []string
						}
					}
				}
				raw, _ := json.Marshal(d)
				if err := json.Unmarshal(raw, &out); err != nil {
					t.Fatal(err)
				}
				var followed []string
				for _, h := range out.SessionDetail.Hits {
					if h.Path == "/internal/wiki" && slices.Contains(h.Signals, "CALLBACK_HIT") {
						followed = append(followed, h.ID)
					}
				}
				if len(followed) == 0 {
					t.Fatalf("no hit on the lure's target carries CALLBACK_HIT: %s", raw)
				}
				wantEvidence := "GET /internal/wiki, from a lure on " + c.page
				var found bool
				for _, s := range out.SessionDetail.Signals {
					if s.Name != "CALLBACK_HIT" {
						continue
					}
					if !slices.Contains(followed, s.HitID) || !strings.HasPrefix(s.Placement, "lure_callback#") || !s.Lure ||
						!strings.HasPrefix(s.PlacementLabel, "lure in a page of your site: hidden link") {
						t.Errorf("the CALLBACK_HIT firing does not tell the lure's story: %+v", s)
					}
					if s.Detail == wantEvidence {
						found = true
					}
					if strings.Contains(s.Detail, "from a lure on /pricing") && c.referer {
						t.Errorf("a Referer the token does not confirm was believed: %q", s.Detail)
					}
				}
				if !found {
					t.Errorf("no firing's evidence is %q: %s", wantEvidence, raw)
				}
				var grouped bool
				for _, g := range out.Node.SignalGroups {
					if g.Signal == "CALLBACK_HIT" {
						grouped = true
						if !strings.HasPrefix(g.PlacementLabel, "lure in a page of your site: hidden link") || !slices.Contains(g.Evidence, wantEvidence) && len(g.Evidence) < 3 {
							t.Errorf("the signal group does not tell the lure's story: %+v", g)
						}
					}
				}
				if !grouped {
					t.Errorf("no CALLBACK_HIT group: %s", raw)
				}
				// REST says the same.
				res, body := env.Get(a.ReadOnly, "/dashboard/api/sessions/"+session)
				if res.StatusCode != 200 || !strings.Contains(string(body), `"placement":"lure_callback#`) || !strings.Contains(string(body), wantEvidence) {
					t.Errorf("REST session detail: %d %s", res.StatusCode, body)
				}
			})
		}
	})
}
