package gqltransport

import (
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/flytrap/flytrap/graph"
)

// FuzzGraphQLDocument feeds documents through what runs before any resolver: the parser
// with its token limit, the selection count, validation, depth and cost. None may panic,
// and what passes the document limits must come out of them (validation is bounded).
// go test ./server/gqltransport/ -run '^$' -fuzz '^FuzzGraphQLDocument$' -fuzztime 1m
func FuzzGraphQLDocument(f *testing.F) {
	schema := graph.NewExecutableSchema(graph.Config{Resolvers: &graph.Resolver{}}).Schema()
	for _, q := range []string{
		`{ organization { id name } }`,
		`query($n: Int) { sessions(first: $n) { edges { node { id hits(first: 2) { edges { node { id } } } } } } }`,
		`{ ...F } fragment F on Query { traps { totalCount } }`,
		`{ a: analytics { overview { activeTraps } } b: analytics { timeline { hour } } }`,
		`{ nodes(ids: ["a", "b"]) { id ... on Session { signals { kind } } } }`,
		`subscription { events(types: ["trap.created"]) { id cursor } }`,
		`mutation { createTrap(input: {name: "x", type: page}) { id } }`,
		`{ __schema { types { name fields { name type { ofType { name } } } } } }`,
		`{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }`,
		`{ organization { id id id } organization { name } }`,
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: q}, maxTokensPerSelection*1000)
		if err != nil {
			return
		}
		if c := countSelections(doc, 1000, maxFragmentSpreads); c.selections > 1000 || c.spreads > maxFragmentSpreads {
			return
		}
		if errs := validator.ValidateWithRules(schema, doc, rules.NewDefaultRules()); len(errs) > 0 {
			return
		}
		for _, op := range doc.Operations {
			if cost := operationCost(op, map[string]any{}, 20000); cost < 0 {
				t.Fatalf("negative cost %d", cost)
			}
			selectionDepth(op.SelectionSet, 0, 0)
		}
	})
}
