package gqltransport

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/flytrap/flytrap/graph"
)

// hostileDocuments are the shapes that make validation cost more than their size, each
// at most n selections and 100 fragment spreads (the default limits at n = 1000).
func hostileDocuments(n int) map[string]string {
	rep := func(s string, n int) string { return strings.Repeat(s+" ", n) }
	var frags, spreads strings.Builder
	for i := range 100 {
		fmt.Fprintf(&frags, "fragment F%d on Query { organization { %s} }\n", i, rep("id", n/200-2))
		fmt.Fprintf(&spreads, "...F%d ", i)
	}
	var aliases strings.Builder
	for i := range n / 3 {
		fmt.Fprintf(&aliases, "a%d: organization { id } ", i)
	}
	return map[string]string{
		"one field repeated":       "{ " + rep("organization { id }", n/2) + "}",
		"one leaf repeated":        "{ organization { " + rep("id", n-1) + "} }",
		"distinct aliases":         "{ " + aliases.String() + "}",
		"fragment spread repeated": "{ " + rep("...F", 99) + rep("organization { id }", (n-99*3)/2-1) + "} fragment F on Query { organization { id } }",
		"distinct fragments":       "{ " + spreads.String() + "}\n" + frags.String(),
		// Arguments are compared pairwise too: as long as the body limit (1 MiB) allows.
		"long argument repeated": "{ " + rep(`trapPreview(id: "`+strings.Repeat("x", (1<<20)/(n/2))+`") { body }`, n/2-1) + "}",
		"nested repeats":         "{ " + rep("organization { sites { edges { node { id name } } } }", n/7) + "}",
	}
}

// BenchmarkValidateHostile measures gqlparser's validation of the costliest documents
// the default limits let through:
// go test ./server/gqltransport/ -run '^$' -bench ValidateHostile -benchtime 3x
func BenchmarkValidateHostile(b *testing.B) {
	schema := graph.NewExecutableSchema(graph.Config{Resolvers: &graph.Resolver{}}).Schema()
	for _, n := range []int{1000} {
		for name, q := range hostileDocuments(n) {
			b.Run(fmt.Sprintf("%s/%d", name, n), func(b *testing.B) {
				doc, err := parser.ParseQuery(&ast.Source{Input: q})
				if err != nil {
					b.Fatal(err)
				}
				if c := countSelections(doc, 1<<30, 1<<30); c.selections > n || c.spreads > 100 {
					b.Fatalf("%d selections, %d spreads: over the limits", c.selections, c.spreads)
				}
				b.SetBytes(int64(len(q)))
				for b.Loop() {
					validator.ValidateWithRules(schema, doc, rules.NewDefaultRules())
				}
			})
		}
	}
}
