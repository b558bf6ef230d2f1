package app

import (
	"context"
	"fmt"
	"time"

	"github.com/flytrap/flytrap/apikey"
	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/site"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/viewer"
)

// CreateAPIKey makes an API key of scope in the caller's organization and returns it in full,
// the only time it is ever available.
func (a *App) CreateAPIKey(ctx context.Context, name string, scope viewer.Scope) (string, *ent.APIKey, error) {
	v, _ := viewer.FromContext(ctx)
	return CreateAPIKey(ctx, a.ent(ctx), v.OrgID, name, scope)
}

// KeyInput is a new API key: its name and scope, and optionally when it expires and the one
// site it is limited to (a deploy key).
type KeyInput struct {
	Name      string
	Scope     viewer.Scope
	ExpiresAt *time.Time
	SiteID    *string
}

// CreateAPIKeyWith makes an API key of the caller's organization from in (admin scope, as
// every key), returned in full once.
func (a *App) CreateAPIKeyWith(ctx context.Context, in KeyInput) (string, *ent.APIKey, error) {
	v, _ := viewer.FromContext(ctx)
	return CreateKey(ctx, a.ent(ctx), v.OrgID, in, a.now())
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

// CreateKey is CreateAPIKey with an expiry and a site (KeyInput); now is the clock the expiry
// is checked against: it must be in the future.
func CreateKey(ctx context.Context, c *ent.Client, org string, in KeyInput, now time.Time) (string, *ent.APIKey, error) {
	if !in.Scope.Valid() {
		return "", nil, apperr.Invalid("scope", "must be READ_ONLY, READ_WRITE or ADMIN")
	}
	if in.ExpiresAt != nil && !in.ExpiresAt.After(now) {
		return "", nil, apperr.Invalid("expiresAt", "must be in the future")
	}
	if in.SiteID != nil {
		if in.Scope == viewer.Admin {
			return "", nil, apperr.Invalid("scope", "a deploy key (siteID) is READ_WRITE or READ_ONLY: it may only manage its site's traps")
		}
		if err := checkID(*in.SiteID, ids.Site, "siteID"); err != nil {
			return "", nil, err
		}
		n, err := c.Site.Query().Where(site.ID(*in.SiteID), site.OrgID(org)).Count(ctx)
		if err != nil {
			return "", nil, err
		}
		if n == 0 {
			return "", nil, apperr.NotFound("site " + *in.SiteID)
		}
	}
	key, err := apikey.Generate()
	if err != nil {
		return "", nil, fmt.Errorf("generate key: %w", err)
	}
	create := c.APIKey.Create().SetOrgID(org).SetName(in.Name).SetScope(in.Scope).
		SetPrefix(key.DisplayPrefix).SetHash(key.Hash).SetNillableSiteID(in.SiteID)
	if in.ExpiresAt != nil {
		create.SetExpiresAt(in.ExpiresAt.UTC().Truncate(time.Millisecond))
	}
	k, err := create.Save(ctx)
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
