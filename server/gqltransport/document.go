package gqltransport

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/flytrap/flytrap/graph"
)

// documentLimit refuses, before gqlgen validates it, a document with more selections
// than validation can check cheaply. Validation is not linear in a document's size:
// gqlparser's overlapping-fields rule compares the fields of one response name pairwise,
// so 20,000 copies of one field (220 KB) cost 24 s of CPU. Counting selections with
// fragments expanded, as validation and execution see them, bounds that work; the walk
// itself stops at the limit, so a fragment bomb costs no more than the limit to count.
type documentLimit struct {
	maxSelections int
	maxSpreads    int // fragment spreads, expanded: pairs of fragments cost validation most
	maxTokens     int
	// cache is the executor's query cache: a document in it was parsed, counted and
	// validated before.
	cache graphql.Cache[*ast.QueryDocument]
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
} = documentLimit{}

func (documentLimit) ExtensionName() string                   { return "DocumentLimit" }
func (documentLimit) Validate(graphql.ExecutableSchema) error { return nil }

func (d documentLimit) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	if d.cache != nil {
		if _, ok := d.cache.Get(ctx, p.Query); ok {
			return nil
		}
	}
	doc, perr := parser.ParseQueryWithTokenLimit(&ast.Source{Input: p.Query}, d.maxTokens)
	if perr != nil {
		return nil // the executor parses it again and reports why it does not parse
	}
	c := countSelections(doc, d.maxSelections, d.maxSpreads)
	var err *gqlerror.Error
	switch {
	case c.selections > d.maxSelections:
		err = gqlerror.Errorf("the document has more than %d selections, fragments expanded; split it into smaller operations", d.maxSelections)
	case c.spreads > d.maxSpreads:
		err = gqlerror.Errorf("the document spreads fragments more than %d times, expanded; split it into smaller operations", d.maxSpreads)
	default:
		return nil
	}
	err.Extensions = map[string]any{"code": graph.CodeBadUserInput}
	return err
}

// countSelections counts the selections (fields, fragment spreads, inline fragments) and
// the fragment spreads of every operation and fragment definition of doc, with fragment
// spreads expanded, stopping once either count is over its limit.
func countSelections(doc *ast.QueryDocument, maxSelections, maxSpreads int) selectionCount {
	c := selectionCounter{doc: doc, maxSelections: maxSelections, maxSpreads: maxSpreads, visiting: map[string]bool{}}
	for _, op := range doc.Operations {
		c.walk(op.SelectionSet)
	}
	for _, f := range doc.Fragments {
		c.walk(f.SelectionSet)
	}
	return c.selectionCount
}

type selectionCount struct{ selections, spreads int }

type selectionCounter struct {
	selectionCount
	doc                       *ast.QueryDocument
	maxSelections, maxSpreads int
	visiting                  map[string]bool // fragments being expanded: a cycle is refused by validation
}

func (c *selectionCounter) walk(set ast.SelectionSet) {
	for _, sel := range set {
		if c.selections++; c.selections > c.maxSelections || c.spreads > c.maxSpreads {
			return
		}
		switch sel := sel.(type) {
		case *ast.Field:
			c.walk(sel.SelectionSet)
		case *ast.InlineFragment:
			c.walk(sel.SelectionSet)
		case *ast.FragmentSpread:
			c.spreads++
			f := c.doc.Fragments.ForName(sel.Name)
			if f == nil || c.visiting[sel.Name] {
				continue
			}
			c.visiting[sel.Name] = true
			c.walk(f.SelectionSet)
			delete(c.visiting, sel.Name)
		default:
			panic(fmt.Sprintf("unknown selection %T", sel))
		}
	}
}
