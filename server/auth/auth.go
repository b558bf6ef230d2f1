// Package auth turns an Authorization header into a viewer: API keys (their use recorded in
// batches, KeyUsage) and JWTs from the identity provider (JWTVerifier, JWTConfig and its settings).
package auth

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/flytrap/flytrap/apikey"
	"github.com/flytrap/flytrap/ent"
	entkey "github.com/flytrap/flytrap/ent/apikey"
	"github.com/flytrap/flytrap/ent/organization"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/graph"
	"github.com/flytrap/flytrap/server/httpx"
	"github.com/flytrap/flytrap/viewer"
)

// ErrUnauthenticated is wrapped by every authentication failure: the APIs answer 401.
var ErrUnauthenticated = graph.ErrUnauthenticated

// msgInvalidJWT is all a caller learns of why its JWT was refused.
const msgInvalidJWT = "invalid or expired token"

func unauthenticated(msg string) error { return fmt.Errorf("%w: %s", ErrUnauthenticated, msg) }

// Authenticator turns a bearer token into a viewer.
type Authenticator struct {
	client *ent.Client
	jwt    *JWTVerifier // nil when no identity provider is configured
	usage  *KeyUsage
	log    *slog.Logger
	now    func() time.Time

	mu   sync.Mutex
	orgs map[string]time.Time // organizations known to exist, until when
}

// NewAuthenticator authenticates against client's API keys and, when jwt is set, the identity provider.
// Why a JWT was refused goes to log, never to the caller.
func NewAuthenticator(client *ent.Client, jwt *JWTVerifier, usage *KeyUsage, log *slog.Logger) *Authenticator {
	return &Authenticator{client: client, jwt: jwt, usage: usage, log: log, now: time.Now, orgs: map[string]time.Time{}}
}

// BearerToken extracts the token of an "Authorization: Bearer …" header value.
func BearerToken(header string) (string, error) {
	if header == "" {
		return "", unauthenticated("missing Authorization: Bearer token")
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "", unauthenticated("the Authorization header must be \"Bearer <token>\"")
	}
	return strings.TrimSpace(token), nil
}

// Authenticate checks an Authorization header value.
func (a *Authenticator) Authenticate(ctx context.Context, header string) (viewer.Viewer, error) {
	token, err := BearerToken(header)
	if err != nil {
		return viewer.Viewer{}, err
	}
	if strings.HasPrefix(token, apikey.Prefix) {
		return a.apiKey(ctx, token)
	}
	if a.jwt == nil {
		return viewer.Viewer{}, unauthenticated("the token is neither an API key nor accepted here as a JWT")
	}
	v, err := a.jwt.Verify(ctx, token)
	if err != nil {
		// The JWT and JWKS libraries' text (claims, kids, the identity provider's
		// address and dial errors) helps an attacker more than a caller: log it.
		a.log.InfoContext(ctx, "JWT refused", "request_id", httpx.RequestID(ctx), "err", err)
		return viewer.Viewer{}, unauthenticated(msgInvalidJWT)
	}
	if err := a.orgExists(ctx, v.OrgID); err != nil {
		return viewer.Viewer{}, err
	}
	return v, nil
}

// apiKey looks a key up by its hash, so the database is asked for one indexed
// row and never sees the key; revocation is seen by the very next request.
func (a *Authenticator) apiKey(ctx context.Context, token string) (viewer.Viewer, error) {
	if !apikey.WellFormed(token) {
		return viewer.Viewer{}, unauthenticated("malformed API key")
	}
	h := apikey.Hash(token)
	k, err := a.client.APIKey.Query().Where(entkey.Hash(h)).Only(privacy.DecisionContext(ctx, privacy.Allow))
	if ent.IsNotFound(err) {
		return viewer.Viewer{}, unauthenticated("unknown API key")
	}
	if err != nil {
		return viewer.Viewer{}, fmt.Errorf("look up API key: %w", err)
	}
	if !apikey.Equal(k.Hash, h) {
		return viewer.Viewer{}, unauthenticated("unknown API key")
	}
	if k.RevokedAt != nil {
		return viewer.Viewer{}, unauthenticated("the API key has been revoked")
	}
	now := a.now()
	if k.ExpiresAt != nil && !now.Before(*k.ExpiresAt) {
		return viewer.Viewer{}, unauthenticated("the API key expired at " + k.ExpiresAt.UTC().Format(time.RFC3339) + "; create a new one")
	}
	a.usage.Record(k.ID, now)
	v := viewer.Viewer{OrgID: k.OrgID, Scope: k.Scope, KeyID: k.ID}
	if k.ExpiresAt != nil {
		v.Expires = *k.ExpiresAt // a stream or subscription ends when the key expires
	}
	if k.SiteID != nil {
		v.SiteID = *k.SiteID
	}
	return v, nil
}

// orgExists refuses tokens naming an organization this service does not have.
func (a *Authenticator) orgExists(ctx context.Context, org string) error {
	now := a.now()
	a.mu.Lock()
	until, ok := a.orgs[org]
	a.mu.Unlock()
	if ok && now.Before(until) {
		return nil
	}
	n, err := a.client.Organization.Query().Where(organization.ID(org)).Count(privacy.DecisionContext(ctx, privacy.Allow))
	if err != nil {
		return fmt.Errorf("look up organization: %w", err)
	}
	if n == 0 {
		return unauthenticated("the token's organization does not exist")
	}
	a.mu.Lock()
	if len(a.orgs) > 10000 {
		clear(a.orgs)
	}
	a.orgs[org] = now.Add(time.Minute)
	a.mu.Unlock()
	return nil
}
