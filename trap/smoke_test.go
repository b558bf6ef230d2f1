package trap_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/flytrap/flytrap/decoy"
	ft "github.com/flytrap/flytrap/flytraptest"
)

func TestSmoke(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		env.MustGraphQL(a.ReadWrite, `mutation { createTrap(input:{name:"Docs", type: page, path:"/internal/docs"}) { id } }`, nil)
		get := func(ua, path string) (int, string) {
			req, _ := http.NewRequest("GET", env.Trap.URL+path, nil)
			req.Header.Set("User-Agent", ua)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			return res.StatusCode, string(body)
		}
		status, page := get("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36", "/internal/docs")
		if status != 200 {
			t.Fatalf("status %d", status)
		}
		key := env.Server.Engine().Key()
		refs := decoy.FindTokens(key, page)
		t.Logf("%d tokens in page", len(refs))
		// Follow every hidden URL like a regex crawler would.
		urls := regexp.MustCompile(`/[A-Za-z0-9._/-]*[a-z2-7]{30,}[A-Za-z0-9._/-]*`).FindAllString(page, -1)
		for _, u := range urls {
			s, _ := get("python-requests/2.32", u)
			t.Logf("GET %s -> %d", u, s)
		}
		status, _ = get("Mozilla/5.0", "/nope")
		d := env.MustGraphQL(a.ReadOnly, `{ sessions { edges { node { id classification score severity signalsFired hitCount userAgent } } } events { edges { node { type data } } } }`, nil)
		t.Logf("%v", d)
		if !strings.Contains(page, "<") {
			t.Fatal("not a page")
		}
	})
}
