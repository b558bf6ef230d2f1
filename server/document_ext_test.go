package server_test

import (
	"fmt"
	"strings"
	"testing"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// Documents that would cost validation seconds are refused before it runs; everything
// the dashboard and GraphQL tooling send passes.
func TestDocumentLimits(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0])
	a := env.Tenant("acme")
	rep := func(s string, n int) string { return strings.Repeat(s+" ", n) }
	var bomb strings.Builder
	bomb.WriteString("{ ...F0 }\n")
	for i := range 30 {
		fmt.Fprintf(&bomb, "fragment F%d on Query { ...F%d ...F%d }\n", i, i+1, i+1)
	}
	bomb.WriteString("fragment F30 on Query { organization { id } }\n")
	var spreads, frags strings.Builder
	for i := range 150 {
		fmt.Fprintf(&spreads, "...F%d ", i)
		fmt.Fprintf(&frags, "fragment F%d on Query { organization { id } }\n", i)
	}
	refused := map[string]string{
		// 20,000 copies of one field, 220 KB: 24 s of CPU in validation before the limit.
		"one field 20,000 times": "{ " + rep("organization { id }", 20000) + "}",
		"one leaf 5,000 times":   "{ organization { " + rep("id", 5000) + "} }",
		"fragment bomb":          bomb.String(),
		"150 distinct fragments": "{ " + spreads.String() + "}\n" + frags.String(),
		"too many tokens":        `{ nodes(ids: [` + rep(`"x",`, 30000) + `]) { id } }`,
	}
	for name, q := range refused {
		t.Run(name, func(t *testing.T) {
			r := env.GraphQL(a.ReadOnly, q, nil)
			if r.Status >= 500 || len(r.Errors) == 0 || r.Data != nil || r.Code() != server.CodeBadUserInput && !strings.Contains(r.Errors[0].Message, "token") {
				t.Fatalf("%d %.300s", r.Status, r.Raw)
			}
			s := openSession(t, env, "graphql-transport-ws", a.ReadOnly)
			if _, code := s.query(q); code == "" || code == server.CodeInternal {
				t.Fatalf("over the WebSocket: code %q", code)
			}
		})
	}
	t.Run("within the limits", func(t *testing.T) {
		wantOK(t, env.GraphQL(a.ReadOnly, "{ "+rep("organization { id }", 400)+"}", nil))
		wantOK(t, env.GraphQL(a.ReadOnly, introspectionQuery, nil))
	})
	t.Run("configurable", func(t *testing.T) {
		env := ft.Start(t, ft.Backends()[0], func(c *server.Config) { c.MaxSelections = 10 })
		a := env.Tenant("acme")
		wantOK(t, env.GraphQL(a.ReadOnly, "{ "+rep("organization { id }", 5)+"}", nil))
		r := env.GraphQL(a.ReadOnly, "{ "+rep("organization { id }", 6)+"}", nil)
		if r.Code() != server.CodeBadUserInput || !strings.Contains(r.Errors[0].Message, "more than 10 selections") {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
	})
}
