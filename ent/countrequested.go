package ent

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
)

// countRequested reports whether a connection's COUNT is needed (ent/template/pagination.tmpl):
// only for a GraphQL selection of totalCount, or of pageInfo without edges. Outside a GraphQL
// field (the REST adapter) nothing reads totalCount, so nothing counts.
func countRequested(ctx context.Context, ignoredEdges bool) bool {
	if graphql.GetFieldContext(ctx) == nil {
		return false
	}
	return collectedField(ctx, totalCountField) != nil || (ignoredEdges && collectedField(ctx, pageInfoField) != nil)
}

type suppliedCountKey struct{ node string }

// WithCount supplies how a connection of node (the ent type's name, e.g. "Session") counts
// for totalCount in place of a COUNT over the filtered rows: graph reads the sessions'
// count from the maintained counters (tally) when the filter allows. It is called only
// when totalCount is asked for, and the paginate helper reads it for that one type only.
func WithCount(ctx context.Context, node string, count func(context.Context) (int, error)) context.Context {
	return context.WithValue(ctx, suppliedCountKey{node}, count)
}

// countOf is the connection's count: the supplied one, else counter's COUNT.
func countOf(ctx context.Context, node string, counter func(context.Context) (int, error)) (int, error) {
	if f, ok := ctx.Value(suppliedCountKey{node}).(func(context.Context) (int, error)); ok {
		return f(ctx)
	}
	return counter(ctx)
}
