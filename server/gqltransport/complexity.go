package gqltransport

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/flytrap/flytrap/graph"
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
//
// Filters (where inputs) are priced too, before anything runs (graph.WhereBudget): each node
// costs 1 and each scan of what visitors sent graph.WhereScanCost, once per row of the pages
// they sit inside, and their size, width, depth and scans are capped.
type costLimit struct {
	max   int
	where graph.WhereLimits
	// listSizes prices lists whose length the server's configuration sets ("Type.field"),
	// over their @listSize.
	listSizes map[string]int
}

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
	cost, werr := c.price(oc.Operation, oc.Variables)
	if werr != nil {
		err := gqlerror.Errorf("%s", werr.Error())
		code := errComplexityLimit
		if we, ok := werr.(*graph.WhereLimitError); ok && we.Invalid {
			code = graph.CodeBadUserInput
		}
		errcode.Set(err, code)
		return err
	}
	if cost > c.max {
		err := gqlerror.Errorf("operation has complexity %d, which exceeds the limit of %d", cost, c.max)
		errcode.Set(err, errComplexityLimit)
		return err
	}
	return nil
}

// price prices a validated operation: its cost, or the first where limit it breaks.
func (c costLimit) price(op *ast.OperationDefinition, vars map[string]any) (int, error) {
	p := &pricer{vars: vars, limit: c.max, where: graph.NewWhereBudget(c.where), listSizes: c.listSizes}
	cost := p.set(op.SelectionSet, 0, 1)
	return cost, p.err
}

// operationCost prices a validated operation under the default where limits; it stops adding
// once past limit, so a fragment bomb costs no more to price than the limit.
func operationCost(op *ast.OperationDefinition, vars map[string]any, limit int) int {
	cost, _ := costLimit{max: limit, where: graph.DefaultWhereLimits}.price(op, vars)
	return cost
}

type pricer struct {
	vars      map[string]any
	limit     int
	where     *graph.WhereBudget
	listSizes map[string]int
	err       error // the first where limit broken
}

// maxMult bounds how many times a selection is priced (pages inside pages).
const maxMult = 1 << 24

// set is the cost of a selection set, at most a little over limit; mult is how many times it
// is resolved (the rows of the pages around it), for the where budget.
func (p *pricer) set(set ast.SelectionSet, fragments, mult int) int {
	total := 0
	for _, sel := range set {
		switch sel := sel.(type) {
		case *ast.Field:
			total += p.field(sel, fragments, mult)
		case *ast.InlineFragment:
			total += p.set(sel.SelectionSet, fragments, mult)
		case *ast.FragmentSpread:
			if sel.Definition != nil && fragments < 50 { // validation refuses cycles; this bounds the walk anyway
				total += p.set(sel.Definition.SelectionSet, fragments+1, mult)
			}
		}
		if total > p.limit || p.err != nil {
			return total
		}
	}
	return total
}

func (p *pricer) field(f *ast.Field, fragments, mult int) int {
	return p.priced(f, fragments, true, mult)
}

// priced is a field's cost, its selections priced once per item of its list when perItem.
func (p *pricer) priced(f *ast.Field, fragments int, perItem bool, mult int) int {
	def := f.Definition
	if def == nil {
		return 1
	}
	cost := directiveInt(def, "cost", "weight", 1) + p.filters(f, def, mult)
	if len(f.SelectionSet) == 0 || p.err != nil {
		return cost
	}
	if isConnection(def.Type) {
		rows := p.pageSize(f)
		for _, sel := range f.SelectionSet {
			var c int
			if fs, ok := sel.(*ast.Field); ok && (fs.Name == "edges" || fs.Name == "nodes") {
				c = rows * p.priced(fs, fragments, false, min(mult*rows, maxMult))
			} else {
				c = p.set(ast.SelectionSet{sel}, fragments, mult)
			}
			cost += c
			if cost > p.limit || p.err != nil {
				return cost
			}
		}
		return cost
	}
	items := 1
	if perItem {
		items = p.items(f, def)
	}
	return cost + items*p.set(f.SelectionSet, fragments, min(mult*items, maxMult))
}

// filters prices f's where arguments, resolved mult times; a broken limit is kept in p.err.
func (p *pricer) filters(f *ast.Field, def *ast.FieldDefinition, mult int) int {
	cost := 0
	for _, a := range def.Arguments {
		if a.Type.Elem != nil || !strings.HasSuffix(a.Type.NamedType, "WhereInput") {
			continue
		}
		v, ok := f.ArgumentMap(p.vars)[a.Name]
		if !ok || v == nil {
			continue
		}
		c, err := p.where.Add(a.Type.NamedType, v, mult)
		if err != nil {
			p.err = err
			return p.limit + 1
		}
		cost += c
	}
	return min(cost, p.limit+1)
}

// items is how many times a field's selections are priced.
func (p *pricer) items(f *ast.Field, def *ast.FieldDefinition) int {
	if def.Type.Elem == nil || strings.HasPrefix(def.Type.Name(), "__") {
		return 1 // introspection's lists are as long as the schema: one walk of it
	}
	if n, ok := p.listSizes[f.ObjectDefinition.Name+"."+def.Name]; ok {
		return n
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
func (p *pricer) pageSize(f *ast.Field) int {
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
