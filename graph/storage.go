package graph

import (
	"context"
	"errors"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/graph/model"
	"github.com/flytrap/flytrap/viewer"
)

// StorageReport measures the database for the storage field; the server sets it.
type StorageReport func(ctx context.Context) (*model.Storage, error)

// Storage is the resolver for the storage field: installation-wide figures, for admins.
func (r *queryResolver) Storage(ctx context.Context) (*model.Storage, error) {
	v, ok := viewer.FromContext(ctx)
	if !ok {
		return nil, ErrUnauthenticated
	}
	if !v.Scope.Includes(viewer.Admin) {
		return nil, &apperr.Error{Kind: apperr.KindForbidden, Msg: "this needs the admin scope"}
	}
	if r.Resolver.Storage == nil {
		return nil, errors.New("storage figures are not available")
	}
	return r.Resolver.Storage(ctx)
}
