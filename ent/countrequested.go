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
