package graph

import (
	"context"

	"github.com/flytrap/flytrap/graph/model"
)

func deleted(id string, err error) (*model.DeletePayload, error) {
	if err != nil {
		return nil, err
	}
	return &model.DeletePayload{ID: id, Deleted: true}, nil
}

func (r *Resolver) createAPIKey(ctx context.Context, in model.CreateAPIKeyInput) (*model.CreateAPIKeyPayload, error) {
	key, k, err := r.app.CreateAPIKey(ctx, in.Name, in.Scope)
	if err != nil {
		return nil, err
	}
	return &model.CreateAPIKeyPayload{Key: key, APIKey: k}, nil
}
