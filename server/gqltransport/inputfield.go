package gqltransport

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
)

// inputFieldAt names the argument or input field whose value stands at the error's
// location, so "String cannot represent a non string value" can say which field.
func inputFieldAt(ctx context.Context, e *gqlerror.Error) string {
	if len(e.Locations) == 0 || !graphql.HasOperationContext(ctx) {
		return ""
	}
	raw := graphql.GetOperationContext(ctx).RawQuery
	if raw == "" || len(raw) > 1<<20 {
		return ""
	}
	doc, err := parser.ParseQuery(&ast.Source{Input: raw})
	if err != nil {
		return ""
	}
	at := e.Locations[0]
	var found string
	var inValue func(name string, v *ast.Value)
	inValue = func(name string, v *ast.Value) {
		if v == nil || found != "" {
			return
		}
		if v.Position != nil && v.Position.Line == at.Line && v.Position.Column == at.Column {
			found = name
			return
		}
		for _, c := range v.Children {
			child := c.Name
			if child == "" { // a list item keeps the list's name
				child = name
			}
			inValue(child, c.Value)
		}
	}
	var inSet func(set ast.SelectionSet)
	inSet = func(set ast.SelectionSet) {
		for _, sel := range set {
			switch sel := sel.(type) {
			case *ast.Field:
				for _, arg := range sel.Arguments {
					inValue(arg.Name, arg.Value)
				}
				inSet(sel.SelectionSet)
			case *ast.InlineFragment:
				inSet(sel.SelectionSet)
			}
		}
	}
	for _, op := range doc.Operations {
		for _, v := range op.VariableDefinitions {
			inValue(v.Variable, v.DefaultValue)
		}
		inSet(op.SelectionSet)
	}
	for _, f := range doc.Fragments {
		inSet(f.SelectionSet)
	}
	return found
}
