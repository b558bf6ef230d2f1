package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// wideOr is the finding's filter: n hasHitsWith branches, each a case-folded substring scan of
// hit bodies.
func wideOr(n int) map[string]any {
	or := make([]any, n)
	for i := range or {
		or[i] = map[string]any{"hasHitsWith": []any{map[string]any{"bodyContainsFold": fmt.Sprintf("needle-%d", i)}}}
	}
	return map[string]any{"or": or}
}

// A where filter is priced before anything runs: the 400-wide or of body scans that cost
// 15.7 s of CPU is refused, whether written in the document or passed as a variable, and
// ordinary filters (the dashboard's, one body search) still answer.
func TestWhereFiltersArePriced(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		s := seedSession(t, env, a.Org.ID, nil)
		seedHits(t, env, s, "", time.Now().Add(-time.Minute))

		refused := func(name, query string, vars map[string]any, limit string) {
			t.Helper()
			r := env.GraphQL(a.ReadOnly, query, vars)
			if r.Code() != "COMPLEXITY_LIMIT_EXCEEDED" || r.Data != nil || !strings.Contains(r.Errors[0].Message, limit) {
				t.Errorf("%s: %d %.400s, want COMPLEXITY_LIMIT_EXCEEDED naming %q", name, r.Status, r.Raw, limit)
			}
		}
		q := `query($w: SessionWhereInput) { sessions(first: 100, where: $w) { totalCount } }`
		refused("400-wide or as a variable", q, map[string]any{"w": wideOr(400)}, "where")

		// The same filter written into the document (its literal form, as the finding sent it).
		var lit strings.Builder
		lit.WriteString(`{ sessions(first: 100, where: {or: [`)
		for i := range 400 {
			fmt.Fprintf(&lit, `{hasHitsWith: [{bodyContainsFold: "needle-%d"}]} `, i)
		}
		lit.WriteString(`]}) { totalCount } }`)
		refused("400-wide or in the document", lit.String(), nil, "where")

		// Each limit names itself.
		refused("or width", q, map[string]any{"w": map[string]any{"or": repeat(map[string]any{"severity": "low"}, 30)}}, "--where-max-width")
		refused("hit scans", q, map[string]any{"w": wideOr(3)}, "--where-max-scans")
		nested := map[string]any{"hasHitsWith": []any{map[string]any{"hasSessionWith": []any{map[string]any{
			"hasHitsWith": []any{map[string]any{"method": "GET"}}}}}}}
		refused("edge depth", q, map[string]any{"w": nested}, "edge")
		var deep any = map[string]any{"severity": "low"}
		for range 200 {
			deep = map[string]any{"not": deep}
		}
		refused("node count", q, map[string]any{"w": deep}, "--where-max-nodes")
		refused("long in list", q, map[string]any{"w": map[string]any{"idIn": repeat("ses_x", 500)}}, "items")
		// Aliases add up, and a filter inside a list is priced once per row of its page.
		refused("aliases", `query($w: SessionWhereInput) { a: sessions(where: $w) { totalCount } b: sessions(where: $w) { totalCount } c: sessions(where: $w) { totalCount } }`,
			map[string]any{"w": wideOr(1)}, "--where-max-scans")
		refused("nested in a page", `{ sessions(first: 50) { edges { node { hits(where: {bodyContains: "x"}) { totalCount } } } } }`, nil, "--where-max-scans")
		refused("hits connections", `{ sessions(first: 1) { edges { node { a: hits(where: {pathContains: "a"}) { totalCount } b: hits(where: {userAgentContainsFold: "b"}) { totalCount } c: hits(where: {queryHasPrefix: "c"}) { totalCount } } } } }`, nil, "--where-max-scans")

		// An empty filter inside or, and, not or hasXWith is the caller's error, not an internal
		// one (ent cannot build it; the fuzz target found it).
		for _, w := range []map[string]any{{"or": []any{map[string]any{}}}, {"not": map[string]any{"severity": nil}},
			{"hasHitsWith": []any{map[string]any{"or": []any{}}}}} {
			if r := env.GraphQL(a.ReadOnly, q, map[string]any{"w": w}); r.Code() != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, "no predicate") {
				t.Errorf("%v: %d %.300s, want BAD_USER_INPUT", w, r.Status, r.Raw)
			}
		}
		wantOK(t, env.GraphQL(a.ReadOnly, q, map[string]any{"w": map[string]any{}}))

		// What the dashboard sends, and one body search, answer.
		dash := map[string]any{"classification": "AI_AGENT", "severity": "high", "hasHitsWith": []any{map[string]any{"trapID": "trp_x"}},
			"lastSeenGTE": time.Now().Add(-time.Hour).Format(time.RFC3339), "sourceIPHasPrefix": "203.0"}
		wantOK(t, env.GraphQL(a.ReadOnly, q, map[string]any{"w": dash}))
		wantOK(t, env.GraphQL(a.ReadOnly, q, map[string]any{"w": wideOr(1)}))
		wantOK(t, env.GraphQL(a.ReadOnly, q, map[string]any{"w": map[string]any{"or": repeat(map[string]any{"severity": "low"}, 20)}}))
		wantOK(t, env.GraphQL(a.ReadOnly, `{ sessions(first: 2) { edges { node { hits(first: 10, where: {bodyContainsFold: "x", method: "POST"}) { totalCount edges { node { id } } } } } } }`, nil))
	})
}

func repeat[T any](v T, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// The where limits are flags like every other limit.
func TestWhereLimitsConfigurable(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) { c.Where.MaxScans = 5 })
	a := env.Tenant("acme")
	wantOK(t, env.GraphQL(a.ReadOnly, `query($w: SessionWhereInput) { sessions(where: $w) { totalCount } }`, map[string]any{"w": wideOr(5)}))
}

// Substring predicates on any list's text are scans: a signal's detail and a session's user
// agent are a visitor's words as much as a hit's (red-team review of issue 22).
func TestWhereScansOnEveryList(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("a")
		wantCode(t, env.GraphQL(a.ReadOnly, `{ sessions(first: 5, where: {hasSignalsWith: [{or: [{detailContains: "a"}, {detailContains: "b"}, {detailContains: "c"}]}]}) { totalCount } }`, nil), "COMPLEXITY_LIMIT_EXCEEDED")
		wantCode(t, env.GraphQL(a.ReadOnly, `{ sessions(first: 5, where: {or: [{userAgentContainsFold: "a"}, {userAgentContainsFold: "b"}, {userAgentHasPrefix: "c"}]}) { totalCount } }`, nil), "COMPLEXITY_LIMIT_EXCEEDED")
		// One or two remain a search the dashboard may make.
		wantOK(t, env.GraphQL(a.ReadOnly, `{ sessions(first: 5, where: {userAgentContainsFold: "python"}) { totalCount } }`, nil))
	})
}
