package graph

import (
	"context"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/graph/model"
)

func deleted(id string, err error) (*model.DeletePayload, error) {
	if err != nil {
		return nil, err
	}
	return &model.DeletePayload{ID: id, Deleted: true}, nil
}

func (r *Resolver) createAPIKey(ctx context.Context, in model.CreateAPIKeyInput) (*model.CreateAPIKeyPayload, error) {
	key, k, err := r.app.CreateAPIKeyWith(ctx, app.KeyInput{Name: in.Name, Scope: in.Scope, ExpiresAt: in.ExpiresAt, SiteID: in.SiteID})
	if err != nil {
		return nil, err
	}
	return &model.CreateAPIKeyPayload{Key: key, APIKey: k}, nil
}
