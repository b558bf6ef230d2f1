package server

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// costLimit refuses operations that cost more than max, priced from the schema itself so
// that every field is covered, new ones included:
//   - a field costs its @cost weight (default 1) plus what its selections cost;
//   - a connection's edges and nodes are priced once per row of its page (first/last,
//     default DefaultPageSize, priced at no more than MaxPageSize);
//   - a list of objects is priced @listSize times, else once per item of its list
//     argument (nodes(ids:)), else MaxPageSize times;
//   - introspection's lists are priced once: the schema bounds them;
//   - every alias is priced: 1,000 aliases of one aggregate cost 1,000 aggregates.
//
// Nested pages multiply, so the limit bounds the rows an operation can make the
// database read and the aggregates it can make it compute.
type costLimit struct{ max int }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = costLimit{}

func (costLimit) ExtensionName() string                   { return "CostLimit" }
func (costLimit) Validate(graphql.ExecutableSchema) error { return nil }

// errComplexityLimit is the code gqlgen's own complexity limit used, kept for clients.
const errComplexityLimit = "COMPLEXITY_LIMIT_EXCEEDED"

func (c costLimit) MutateOperationContext(_ context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	if oc.Operation == nil {
		return nil
	}
	if cost := operationCost(oc.Operation, oc.Variables, c.max); cost > c.max {
		err := gqlerror.Errorf("operation has complexity %d, which exceeds the limit of %d", cost, c.max)
		errcode.Set(err, errComplexityLimit)
		return err
	}
	return nil
}

// operationCost prices a validated operation; it stops adding once past limit, so a
// fragment bomb costs no more to price than the limit.
func operationCost(op *ast.OperationDefinition, vars map[string]any, limit int) int {
	p := pricer{vars: vars, limit: limit}
	return p.set(op.SelectionSet, 0)
}

type pricer struct {
	vars  map[string]any
	limit int
}

// set is the cost of a selection set, at most a little over limit.
func (p pricer) set(set ast.SelectionSet, fragments int) int {
	total := 0
	for _, sel := range set {
		switch sel := sel.(type) {
		case *ast.Field:
			total += p.field(sel, fragments)
		case *ast.InlineFragment:
			total += p.set(sel.SelectionSet, fragments)
		case *ast.FragmentSpread:
			if sel.Definition != nil && fragments < 50 { // validation refuses cycles; this bounds the walk anyway
				total += p.set(sel.Definition.SelectionSet, fragments+1)
			}
		}
		if total > p.limit {
			return total
		}
	}
	return total
}

func (p pricer) field(f *ast.Field, fragments int) int { return p.priced(f, fragments, true) }

// priced is a field's cost, its selections priced once per item of its list when perItem.
func (p pricer) priced(f *ast.Field, fragments int, perItem bool) int {
	def := f.Definition
	if def == nil {
		return 1
	}
	cost := directiveInt(def, "cost", "weight", 1)
	if len(f.SelectionSet) == 0 {
		return cost
	}
	if isConnection(def.Type) {
		rows := p.pageSize(f)
		for _, sel := range f.SelectionSet {
			var c int
			if fs, ok := sel.(*ast.Field); ok && (fs.Name == "edges" || fs.Name == "nodes") {
				c = rows * p.priced(fs, fragments, false)
			} else {
				c = p.set(ast.SelectionSet{sel}, fragments)
			}
			cost += c
			if cost > p.limit {
				return cost
			}
		}
		return cost
	}
	items := 1
	if perItem {
		items = p.items(f, def)
	}
	return cost + items*p.set(f.SelectionSet, fragments)
}

// items is how many times a field's selections are priced.
func (p pricer) items(f *ast.Field, def *ast.FieldDefinition) int {
	if def.Type.Elem == nil || strings.HasPrefix(def.Type.Name(), "__") {
		return 1 // introspection's lists are as long as the schema: one walk of it
	}
	if n := directiveInt(def, "listSize", "assumedSize", 0); n > 0 {
		return n
	}
	for _, a := range def.Arguments {
		if a.Type.Elem != nil {
			if list, ok := f.ArgumentMap(p.vars)[a.Name].([]any); ok {
				return max(1, len(list))
			}
		}
	}
	return MaxPageSize
}

// pageSize is the rows a connection's page may hold; a size over the maximum is
// refused by pageLimits with a clear message, so it is priced at the maximum.
func (p pricer) pageSize(f *ast.Field) int {
	args := f.ArgumentMap(p.vars)
	for _, name := range []string{"first", "last"} {
		if n, ok := toInt(args[name]); ok {
			return max(1, min(n, MaxPageSize))
		}
	}
	return DefaultPageSize
}

// toInt reads an integer argument, whether written in the document or passed as a variable.
func toInt(v any) (int, bool) {
	switch v := v.(type) {
	case int64:
		return int(min(max(v, -1), MaxPageSize+1)), true
	case int:
		return v, true
	case float64:
		return int(min(max(v, -1), MaxPageSize+1)), true
	case json.Number:
		n, err := v.Int64()
		return int(min(max(n, -1), MaxPageSize+1)), err == nil
	}
	return 0, false
}

func isConnection(t *ast.Type) bool {
	return t.Elem == nil && strings.HasSuffix(t.NamedType, "Connection")
}

func directiveInt(def *ast.FieldDefinition, directive, arg string, fallback int) int {
	d := def.Directives.ForName(directive)
	if d == nil {
		return fallback
	}
	a := d.Arguments.ForName(arg)
	if a == nil || a.Value == nil {
		return fallback
	}
	n, err := strconv.Atoi(a.Value.Raw)
	if err != nil {
		return fallback
	}
	return n
}
