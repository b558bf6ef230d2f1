package auth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/flytrap/flytrap/viewer"
)

// ErrInvalidToken is wrapped by every Verify failure (the HTTP layer maps it to 401).
var ErrInvalidToken = errors.New("invalid token")

const (
	defaultOrgClaim   = "org_id"
	defaultScopeClaim = "scope"

	// Leeway absorbs clock skew between us and the identity provider: a token is accepted this long past its exp.
	Leeway = 30 * time.Second

	// jwksHTTPTimeout bounds each JWKS fetch, so a slow identity provider
	// cannot hold start-up or a request hostage.
	jwksHTTPTimeout = 10 * time.Second

	// jwksRefreshInterval is how often the JWKS is re-fetched in the
	// background; it also bounds how long a key the provider revoked keeps
	// being accepted.
	jwksRefreshInterval = 15 * time.Minute

	// jwksUnknownKIDInterval limits the out-of-band refreshes triggered by
	// tokens with a kid we do not know. Without a limit, anyone could make
	// us hammer the identity provider by sending tokens with random kids.
	jwksUnknownKIDInterval = time.Minute

	// maxTokenBytes rejects absurd inputs before any base64 or JSON work.
	// Real access tokens, even with many group claims, stay far below it.
	maxTokenBytes = 16 << 10
)

// validJWTMethods lists the only algorithms we accept. They are all
// asymmetric: "none" would skip the signature, and HS* would let anyone who
// knows the (public) JWKS key material forge tokens.
func validJWTMethods() []string {
	return []string{
		jwt.SigningMethodRS256.Alg(), jwt.SigningMethodRS384.Alg(), jwt.SigningMethodRS512.Alg(),
		jwt.SigningMethodPS256.Alg(), jwt.SigningMethodPS384.Alg(), jwt.SigningMethodPS512.Alg(),
		jwt.SigningMethodES256.Alg(), jwt.SigningMethodES384.Alg(), jwt.SigningMethodES512.Alg(),
		jwt.SigningMethodEdDSA.Alg(),
	}
}

// JWTConfig is the identity-provider part of the configuration.
type JWTConfig struct {
	JWKSURL    string // FLYTRAP_JWKS_URL; empty disables JWT auth
	Issuer     string // FLYTRAP_JWT_ISSUER (required when JWKSURL set)
	Audience   string // FLYTRAP_JWT_AUDIENCE (required when JWKSURL set)
	OrgClaim   string // FLYTRAP_JWT_ORG_CLAIM, default "org_id"
	ScopeClaim string // FLYTRAP_JWT_SCOPE_CLAIM, default "scope"
}

// Enabled reports whether JWT authentication is configured at all.
func (c JWTConfig) Enabled() bool { return strings.TrimSpace(c.JWKSURL) != "" }

// Validate checks an enabled configuration (trimmed, default claims filled in); a disabled one is valid.
func (c JWTConfig) Validate() error {
	if !c.Enabled() {
		return nil
	}
	return c.normalize().validate()
}

// normalize trims stray whitespace (common in env files) and fills in the
// default claim names.
func (c JWTConfig) normalize() JWTConfig {
	c.JWKSURL = strings.TrimSpace(c.JWKSURL)
	c.Issuer = strings.TrimSpace(c.Issuer)
	c.Audience = strings.TrimSpace(c.Audience)
	c.OrgClaim = strings.TrimSpace(c.OrgClaim)
	c.ScopeClaim = strings.TrimSpace(c.ScopeClaim)
	if c.OrgClaim == "" {
		c.OrgClaim = defaultOrgClaim
	}
	if c.ScopeClaim == "" {
		c.ScopeClaim = defaultScopeClaim
	}
	return c
}

// validate checks a normalized, enabled configuration.
func (c JWTConfig) validate() error {
	u, err := url.Parse(c.JWKSURL)
	if err != nil {
		return fmt.Errorf("parse jwks url: %w", err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("jwks url %q must be an absolute http or https url", u.Redacted())
	}
	// A JWKS is public by definition; credentials in its URL would only end
	// up in logs and error messages.
	if u.User != nil {
		return fmt.Errorf("jwks url %q must not contain credentials", u.Redacted())
	}
	// Without issuer and audience checks, any token signed by the provider
	// for any of its applications would be accepted here.
	if c.Issuer == "" {
		return errors.New("jwt issuer is required when the jwks url is set")
	}
	if c.Audience == "" {
		return errors.New("jwt audience is required when the jwks url is set")
	}
	if c.OrgClaim == c.ScopeClaim {
		return fmt.Errorf("org claim and scope claim must differ (both %q)", c.OrgClaim)
	}
	return nil
}

// JWTVerifier checks JWTs issued by the dashboard's identity provider.
// It is safe for concurrent use.
type JWTVerifier struct {
	keys       keyfunc.Keyfunc
	stop       context.CancelFunc // ends the background JWKS refresh
	parser     *jwt.Parser
	orgClaim   string
	scopeClaim string
}

// NewJWTVerifier fetches the JWKS once (fail fast with a clear error if
// unreachable or invalid), and keeps it fresh in the background until ctx
// ends. Unknown kids trigger a rate-limited refresh (keyfunc's
// RefreshUnknownKID option) so key rotation at the IdP works without restart.
//
// If cfg.JWKSURL is empty, JWT authentication is disabled and it returns
// (nil, nil); Verify on a nil *JWTVerifier rejects every token.
func NewJWTVerifier(ctx context.Context, cfg JWTConfig) (*JWTVerifier, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	cfg = cfg.normalize()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("jwt config: %w", err)
	}

	// keyfunc starts the background refresh goroutine before its first
	// fetch, so a failed start must stop it explicitly.
	refreshCtx, cancel := context.WithCancel(ctx)
	keys, err := fetchJWKS(refreshCtx, cfg.JWKSURL)
	if err != nil {
		cancel()
		return nil, err
	}

	return &JWTVerifier{
		keys: keys,
		stop: cancel,
		parser: jwt.NewParser(
			jwt.WithValidMethods(validJWTMethods()),
			jwt.WithIssuer(cfg.Issuer),
			jwt.WithAudience(cfg.Audience),
			jwt.WithExpirationRequired(),
			jwt.WithLeeway(Leeway),
			jwt.WithIssuedAt(),
		),
		orgClaim:   cfg.OrgClaim,
		scopeClaim: cfg.ScopeClaim,
	}, nil
}

// fetchJWKS loads the key set once and keeps it fresh until ctx ends.
func fetchJWKS(ctx context.Context, jwksURL string) (keyfunc.Keyfunc, error) {
	failFast := false
	keys, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{jwksURL}, keyfunc.Override{
		HTTPTimeout: jwksHTTPTimeout,
		// keyfunc's default is to start with an empty key set and retry
		// later; we would rather refuse to start than reject every login.
		NoErrorReturnFirstHTTPReq: &failFast,
		RefreshInterval:           jwksRefreshInterval,
		RefreshUnknownKID:         rate.NewLimiter(rate.Every(jwksUnknownKIDInterval), 1),
		// This bounds both the wait for the limiter and the out-of-band
		// fetch. While the next refresh slot is further away than this,
		// rate.Limiter.Wait fails at once instead of parking the request;
		// closer than that, a request waits at most this long.
		RateLimitWaitMax: jwksHTTPTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("fetch jwks from %s: %w", jwksURL, err)
	}
	// A reachable URL that serves no usable keys (wrong endpoint, or only
	// key types jwkset skips) would reject every token: treat it as broken.
	all, err := keys.Storage().KeyReadAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("read jwks from %s: %w", jwksURL, err)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("jwks at %s has no usable keys", jwksURL)
	}
	return keys, nil
}

// Close stops the background JWKS refresh before ctx (given to
// NewJWTVerifier) ends. Verify keeps working with the keys already fetched.
// Close is safe to call more than once and on a nil verifier.
func (v *JWTVerifier) Close() {
	if v != nil {
		v.stop()
	}
}

// Verify validates signature, alg (only asymmetric algs: RS256/384/512,
// PS256/384/512, ES256/384/512, EdDSA — never none or HS*), exp (required),
// nbf, iat, issuer and audience (both required to match), with a small
// leeway (30s), and returns the viewer.
//
// Org comes from the configured org claim (string, required, non-empty).
// Scope comes from the configured scope claim: a string (possibly
// space-separated, OAuth style) or an array of strings, each spelled
// read-only/read-write/admin or READ_ONLY/...; unrecognised entries such as
// "openid" are ignored, the highest recognised scope wins, and none at all is
// an error. Subject is the "sub" claim, required and non-empty.
//
// Every error wraps ErrInvalidToken; none contains the token itself.
// ctx bounds the JWKS refresh an unknown kid may trigger.
func (v *JWTVerifier) Verify(ctx context.Context, token string) (viewer.Viewer, error) {
	if v == nil {
		return viewer.Viewer{}, fmt.Errorf("%w: jwt authentication is not configured", ErrInvalidToken)
	}
	if token == "" {
		return viewer.Viewer{}, fmt.Errorf("%w: empty token", ErrInvalidToken)
	}
	if len(token) > maxTokenBytes {
		return viewer.Viewer{}, fmt.Errorf("%w: token longer than %d bytes", ErrInvalidToken, maxTokenBytes)
	}

	claims := jwt.MapClaims{}
	// jwt's and keyfunc's errors describe what failed (expired, bad
	// signature, unknown kid) without echoing the token, so they are kept
	// for the logs.
	if _, err := v.parser.ParseWithClaims(token, claims, v.keys.KeyfuncCtx(ctx)); err != nil {
		return viewer.Viewer{}, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}

	org, err := orgFromClaims(claims, v.orgClaim)
	if err != nil {
		return viewer.Viewer{}, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	scope, err := scopeFromClaims(claims, v.scopeClaim)
	if err != nil {
		return viewer.Viewer{}, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	sub, err := claims.GetSubject()
	if err != nil {
		return viewer.Viewer{}, fmt.Errorf("%w: sub claim: %w", ErrInvalidToken, err)
	}
	if strings.TrimSpace(sub) == "" {
		// The subject keys the caller's rate-limit bucket: without one, every such
		// token of an organization would share (and could exhaust) one bucket.
		return viewer.Viewer{}, fmt.Errorf("%w: missing or empty sub claim", ErrInvalidToken)
	}
	var expires time.Time
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil {
		expires = exp.Add(Leeway) // as long as a request with it is accepted
	}
	return viewer.Viewer{OrgID: org, Scope: scope, Subject: sub, Expires: expires}, nil
}

// orgFromClaims returns the organization claim. Claim values are not put in
// errors: they come from the token.
func orgFromClaims(claims jwt.MapClaims, name string) (string, error) {
	raw, ok := claims[name]
	if !ok {
		return "", fmt.Errorf("missing %q claim", name)
	}
	org, ok := raw.(string)
	if !ok {
		return "", fmt.Errorf("%q claim must be a string", name)
	}
	if strings.TrimSpace(org) == "" {
		return "", fmt.Errorf("%q claim is empty", name)
	}
	return org, nil
}

// scopeFromClaims returns the highest scope named in the scope claim.
func scopeFromClaims(claims jwt.MapClaims, name string) (viewer.Scope, error) {
	var entries []string
	switch raw := claims[name].(type) {
	case nil:
		return "", fmt.Errorf("missing %q claim", name)
	case string:
		entries = strings.Fields(raw)
	case []any:
		for _, e := range raw {
			s, ok := e.(string)
			if !ok {
				return "", fmt.Errorf("%q claim must contain only strings", name)
			}
			entries = append(entries, s)
		}
	default:
		return "", fmt.Errorf("%q claim must be a string or an array of strings", name)
	}

	var best viewer.Scope
	for _, e := range entries {
		s, err := viewer.ParseScope(e)
		if err != nil {
			// Providers mix in their own scopes (openid, profile, …).
			continue
		}
		if !best.Includes(s) {
			best = s
		}
	}
	if !best.Valid() {
		return "", fmt.Errorf("no recognised scope in %q claim (want read-only, read-write or admin)", name)
	}
	return best, nil
}
