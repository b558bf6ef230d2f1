package trap_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// The live robots.txt lists the site's traps in one order on every request, as the
// preview does: a map's order, new per request, told a crawler the file is generated.
func TestRobotsListsTrapsInAStableOrder(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		var paths []string
		for _, p := range []string{"/admin/zeta", "/internal/alpha", "/api/mid", "/backup/b", "/docs/k", "/x/y"} {
			env.MustGraphQL(a.ReadWrite, `mutation($p: String!) { createTrap(input:{name:"t", type: page, path: $p}) { id } }`, map[string]any{"p": p})
			paths = append(paths, p)
		}
		env.MustGraphQL(a.ReadWrite, `mutation { createTrap(input:{name:"robots", type: robots}) { id } }`, nil)
		slices.Sort(paths)
		for range 20 {
			res, err := http.Get(env.Trap.URL + "/robots.txt")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			var got []string
			for line := range strings.SplitSeq(string(body), "\n") {
				if d, ok := strings.CutPrefix(line, "Disallow: "); ok && slices.Contains(paths, d) {
					got = append(got, d)
				}
			}
			if !slices.Equal(got, paths) {
				t.Fatalf("Disallow lines %v, want %v:\n%s", got, paths, body)
			}
		}
	})
}
