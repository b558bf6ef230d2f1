package trap_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/detect"
	ft "github.com/flytrap/flytrap/flytraptest"
)

// A script must not tell a trap listener from an ordinary nginx-fronted site by how it
// answers: methods a page does not serve, a canary on a path of its own, planted URLs.
func TestListenerAnswersLikeARealServer(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		c := newCorpus(t, b)
		t.Run("PUT, DELETE, TRACE, PATCH on a page trap", func(t *testing.T) {
			v := c.visitor("method prober", uaCurl, "198.51.100.150", want{})
			for _, m := range []string{http.MethodPut, http.MethodDelete, http.MethodTrace, http.MethodPatch} {
				r := v.do(t, m, "/internal/docs/billing", "x", nil)
				if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "GET, HEAD, POST" ||
					!strings.Contains(r.body, "<center><h1>405 Not Allowed</h1></center>") {
					t.Errorf("%s: %d Allow %q %q", m, r.status, r.header.Get("Allow"), r.body)
				}
			}
			if s := v.current(t); s.HitCount != v.tally.hits {
				t.Errorf("hitCount %d, want %d: a method a trap refuses is still a hit of the trap", s.HitCount, v.tally.hits)
			}
		})
		t.Run("a canary on a path of its own gets the plain 404", func(t *testing.T) {
			v := c.visitor("canary echo", uaCredEnv, "198.51.100.151", want{})
			plan := readLikeAnLLM(t, v.get(t, "/internal/docs/billing").body)
			stranger := c.visitor("404 baseline", uaStranger, "198.51.100.152", want{})
			path := "/api/v1/lookup"
			plain := stranger.get(t, path+"?ref=nothing")
			echo := v.get(t, path+"?ref="+url.QueryEscape(plan.canary))
			if echo.status != http.StatusNotFound || echo.body != plain.body || echo.header.Get("Content-Type") != plain.header.Get("Content-Type") {
				t.Errorf("canary echo answered %d %q, an unknown path %d %q", echo.status, echo.body, plain.status, plain.body)
			}
			if s := v.current(t); !slices.Contains(s.SignalsFired, detect.SignalInjectionFollowed) || s.HitCount != v.tally.hits {
				t.Errorf("the echo behind the 404 was not recorded: %+v", s)
			}
		})
		t.Run("planted URLs answer what fits them", func(t *testing.T) {
			v := c.visitor("link follower", uaRegex, "198.51.100.153", want{})
			page := v.get(t, "/internal/docs/billing").body
			plan := readLikeAnLLM(t, page)
			for _, p := range append(plan.follow, plan.verifyPath, plan.sinkPath) {
				r := v.get(t, p)
				want := decoy.TokenAnswer(p, http.MethodGet)
				if r.status != want.Status || r.body != string(want.Body) || r.header.Get("Content-Type") != want.ContentType {
					t.Errorf("GET %s: %d %q, want %d %q", p, r.status, r.body, want.Status, want.Body)
				}
				if r.header.Get("Server") != decoy.ServerHeader {
					t.Errorf("GET %s: Server %q", p, r.header.Get("Server"))
				}
			}
		})
	})
}
