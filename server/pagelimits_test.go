package server_test

import (
	"fmt"
	"strings"
	"testing"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/graph"
)

// The page limits run as the @pageLimits directive, so a connection field without it would
// have no default page size and no maximum.
func TestEveryConnectionHasPageLimits(t *testing.T) {
	schema := graph.NewExecutableSchema(graph.Config{}).Schema()
	n := 0
	for _, typ := range schema.Types {
		if strings.HasPrefix(typ.Name, "__") {
			continue
		}
		for _, f := range typ.Fields {
			if f.Type.Elem != nil || !strings.HasSuffix(f.Type.Name(), "Connection") {
				continue
			}
			n++
			if f.Directives.ForName("pageLimits") == nil {
				t.Errorf("%s.%s returns %s without @pageLimits", typ.Name, f.Name, f.Type)
			}
		}
	}
	if n < 9 {
		t.Fatalf("%d connection fields, want at least 9", n)
	}
}

// Every connection answers an out-of-range first or last with the same error (both out of
// range: first's), and its page without either holds DefaultPageSize rows.
func TestPageLimitsOnEveryConnection(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		for range 3 {
			seedSession(t, env, a.Org.ID, nil)
		}
		// data is the response's data when the field's error nulls it: a nested connection
		// nulls its session only.
		fields := []struct{ path, open, close, data string }{
			{`"apiKeys"`, "apiKeys(", ") { totalCount }", "null"},
			{`"events"`, "events(", ") { totalCount }", "null"},
			{`"sessions"`, "sessions(", ") { totalCount }", "null"},
			{`"sites"`, "sites(", ") { totalCount }", "null"},
			{`"traps"`, "traps(", ") { totalCount }", "null"},
			{`"webhookEndpoints"`, "webhookEndpoints(", ") { totalCount }", "null"},
			{`"webhookDeliveries"`, `webhookDeliveries(endpointID: "whe_01hzzzzzzzzzzzzzzzzzzzzzzz", `, ") { edges { cursor } }", "null"},
			{`"campaigns"`, "campaigns(", ") { edges { cursor } }", "null"},
			{`"sessions","edges",0,"node","hits"`, "sessions(first: 1) { edges { node { hits(", ") { totalCount } } } }", `{"sessions":{"edges":[{"node":null}]}}`},
		}
		for _, f := range fields {
			for _, args := range []string{"first: 101", "first: -1", "last: 101", "last: -1", "first: 2147483647", "first: 101, last: 101"} {
				if f.open == "campaigns(" && strings.Contains(args, "last") {
					continue // campaigns take first only
				}
				if strings.Contains(f.path, "hits") && (strings.Contains(args, "-") || strings.Contains(args, ",")) {
					continue // entgql refuses these while the sessions page collects its hits
				}
				t.Run(f.open+args, func(t *testing.T) {
					q := "{ " + f.open + args + f.close + " }"
					r := env.GraphQL(a.Admin, q, nil)
					name := strings.SplitN(args, ":", 2)[0]
					col := 3 // the error's location: the field's name
					if strings.Contains(f.path, "hits") {
						col = strings.Index(q, "hits(") + 1
					}
					want := fmt.Sprintf(`{"errors":[{"message":"%s: must be between 0 and 100","path":[%s],"locations":[{"line":1,"column":%d}],"extensions":{"code":"BAD_USER_INPUT","field":"%s"}}],"data":%s}`,
						name, f.path, col, name, f.data)
					if got := strings.TrimSpace(string(r.Raw)); got != want {
						t.Errorf("got  %s\nwant %s", got, want)
					}
				})
			}
		}
		// Without first or last: DefaultPageSize rows. 60 sessions, so the default shows.
		for range 57 {
			seedSession(t, env, a.Org.ID, nil)
		}
		r := env.MustGraphQL(a.ReadOnly, `{ sessions { edges { cursor } pageInfo { hasNextPage } } }`, nil)
		if n := len(ft.Dig(r, "sessions", "edges").([]any)); n != 50 || ft.Dig(r, "sessions", "pageInfo", "hasNextPage") != true {
			t.Errorf("sessions without first: %d rows, hasNextPage %v", n, ft.Dig(r, "sessions", "pageInfo", "hasNextPage"))
		}
	})
}
