package graph

import (
	"context"
	"fmt"
	"time"

	"github.com/flytrap/flytrap/apikey"
	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/graph/model"
)

func deleted(id string, err error) (*model.DeletePayload, error) {
	if err != nil {
		return nil, err
	}
	return &model.DeletePayload{ID: id, Deleted: true}, nil
}

func (r *Resolver) createAPIKey(ctx context.Context, in model.CreateAPIKeyInput) (*model.CreateAPIKeyPayload, error) {
	if !in.Scope.Valid() {
		return nil, apperr.Invalid("scope", "must be READ_ONLY, READ_WRITE or ADMIN")
	}
	key, err := apikey.Generate()
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	k, err := r.ent(ctx).APIKey.Create().
		SetName(in.Name).
		SetScope(in.Scope).
		SetPrefix(key.DisplayPrefix).
		SetHash(key.Hash).
		Save(ctx)
	if err != nil {
		return nil, err
	}
	return &model.CreateAPIKeyPayload{Key: key.Plaintext, APIKey: k}, nil
}

// revokeAPIKey revokes a key once; revoking it again keeps the first revocation time.
func (r *Resolver) revokeAPIKey(ctx context.Context, id string) (*ent.APIKey, error) {
	c := r.ent(ctx)
	k, err := c.APIKey.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if k.RevokedAt != nil {
		return k, nil
	}
	return c.APIKey.UpdateOneID(id).SetRevokedAt(r.now().UTC().Truncate(time.Millisecond)).Save(ctx)
}
