package rest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRESTCallsUseCasesOnly: the REST adapter reaches the data through app's use cases alone. It
// imports no entgql (no where inputs, orders or cursors of its own), no GraphQL model, and uses
// of graph only what is no resolver: Present, the schema's enum values and field names (so it
// cannot hold a graph.Resolver, whose Query() and Mutation() are gqlgen's signatures).
func TestRESTCallsUseCasesOnly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"Present": true, "EnumValues": true, "FieldKey": true}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		graphName := ""
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case path == "entgo.io/contrib/entgql", strings.HasPrefix(path, "github.com/flytrap/flytrap/graph/"):
				t.Errorf("%s imports %s: REST passes app's domain types, not GraphQL's or entgql's", name, path)
			case path == "github.com/flytrap/flytrap/graph":
				graphName = "graph"
				if imp.Name != nil {
					graphName = imp.Name.Name
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && graphName != "" && id.Name == graphName && !allowed[sel.Sel.Name] {
				t.Errorf("%s: graph.%s: REST calls app's use cases, not the GraphQL package", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}
