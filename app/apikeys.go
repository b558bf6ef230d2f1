package app

import (
	"context"
	"fmt"
	"time"

	"github.com/flytrap/flytrap/apikey"
	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/viewer"
)

// CreateAPIKey makes an API key of scope in the caller's organization and returns it in full,
// the only time it is ever available.
func (a *App) CreateAPIKey(ctx context.Context, name string, scope viewer.Scope) (string, *ent.APIKey, error) {
	v, _ := viewer.FromContext(ctx)
	return CreateAPIKey(ctx, a.ent(ctx), v.OrgID, name, scope)
}

// RevokeAPIKey revokes one of the caller's keys (see the function RevokeAPIKey).
func (a *App) RevokeAPIKey(ctx context.Context, id string) (*ent.APIKey, error) {
	if err := CheckID(id, ids.APIKey); err != nil {
		return nil, err
	}
	return RevokeAPIKey(ctx, a.ent(ctx), id, a.now())
}

// CreateAPIKey makes an API key of scope in org and returns it in full, the only time it
// is ever available. The API (App.CreateAPIKey) and the command line both make keys with it.
func CreateAPIKey(ctx context.Context, c *ent.Client, org, name string, scope viewer.Scope) (string, *ent.APIKey, error) {
	if !scope.Valid() {
		return "", nil, apperr.Invalid("scope", "must be READ_ONLY, READ_WRITE or ADMIN")
	}
	key, err := apikey.Generate()
	if err != nil {
		return "", nil, fmt.Errorf("generate key: %w", err)
	}
	k, err := c.APIKey.Create().SetOrgID(org).SetName(name).SetScope(scope).
		SetPrefix(key.DisplayPrefix).SetHash(key.Hash).Save(ctx)
	if err != nil {
		return "", nil, err
	}
	return key.Plaintext, k, nil
}

// RevokeAPIKey revokes a key once; revoking it again keeps the first revocation time.
func RevokeAPIKey(ctx context.Context, c *ent.Client, id string, now time.Time) (*ent.APIKey, error) {
	k, err := c.APIKey.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if k.RevokedAt != nil {
		return k, nil
	}
	return c.APIKey.UpdateOneID(id).SetRevokedAt(now.UTC().Truncate(time.Millisecond)).Save(ctx)
}
