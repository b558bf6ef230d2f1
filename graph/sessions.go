package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"

	"github.com/flytrap/flytrap/ent"
)

// TotalCountExact is the resolver for the totalCountExact field: false when totalCount was
// counted under a filter the counters do not cover and reached the cap (app.Sessions).
func (r *sessionConnectionResolver) TotalCountExact(ctx context.Context, obj *ent.SessionConnection) (bool, error) {
	var where *ent.SessionWhereInput
	if fc := graphql.GetFieldContext(ctx); fc != nil && fc.Parent != nil {
		where, _ = fc.Parent.Args["where"].(*ent.SessionWhereInput)
	}
	return r.app.TotalCountExact(obj.TotalCount, where), nil
}

// SessionConnection returns SessionConnectionResolver implementation.
func (r *Resolver) SessionConnection() SessionConnectionResolver {
	return &sessionConnectionResolver{r}
}

type sessionConnectionResolver struct{ *Resolver }
