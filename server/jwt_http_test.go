package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/server/auth"
	"github.com/flytrap/flytrap/server/auth/authtest"
	"github.com/flytrap/flytrap/store"
)

// TestJWTThroughAPI signs in to the real API with identity-provider tokens.
func TestJWTThroughAPI(t *testing.T) {
	key := authtest.NewRSAKey(t, "k1", jwt.SigningMethodRS256, "RS256")
	_, hs, org := jwtServer(t, key, func(cfg *Config) { cfg.JWT.OrgClaim, cfg.JWT.ScopeClaim = "org_id", "scope" })

	post := func(token, query string) (int, map[string]any) {
		body, _ := json.Marshal(map[string]any{"query": query})
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, out
	}
	claims := func(org, scope string) jwt.MapClaims {
		c := authtest.ValidClaims()
		c["org_id"], c["scope"] = org, scope
		return c
	}
	code := func(out map[string]any) any {
		errs, _ := out["errors"].([]any)
		if len(errs) == 0 {
			return nil
		}
		return errs[0].(map[string]any)["extensions"].(map[string]any)["code"]
	}

	status, out := post(key.Sign(t, claims(org.ID, "openid read-write")), `{ organization { id } }`)
	if status != 200 || out["data"].(map[string]any)["organization"].(map[string]any)["id"] != org.ID {
		t.Fatalf("valid JWT: %d %v", status, out)
	}
	status, out = post(key.Sign(t, claims(org.ID, "read-write")), `mutation { createTrap(input:{name:"x", type: api}) { id } }`)
	if status != 200 || code(out) != nil {
		t.Fatalf("read-write JWT creating a trap: %d %v", status, out)
	}
	status, out = post(key.Sign(t, claims(org.ID, "read-only")), `mutation { createTrap(input:{name:"y", type: api}) { id } }`)
	if status != 200 || code(out) != CodeForbidden {
		t.Fatalf("read-only JWT creating a trap: want FORBIDDEN, got %d %v", status, out)
	}
	for name, tok := range map[string]string{
		"unknown organization": key.Sign(t, claims("org_01m8000000000000000000000", "admin")),
		"expired":              key.Sign(t, authtest.With(claims(org.ID, "admin"), "exp", time.Now().Add(-time.Hour).Unix())),
		"wrong audience":       key.Sign(t, authtest.With(claims(org.ID, "admin"), "aud", "someone-else")),
	} {
		status, out := post(tok, `{ organization { id } }`)
		if status != http.StatusUnauthorized || code(out) != CodeUnauthenticated {
			t.Errorf("%s: want 401 UNAUTHENTICATED, got %d %v", name, status, out)
		}
	}
}

// TestJWTRefusalsAreStable: whatever the JWT library found wrong, the caller reads one
// stable message; the cause goes to the log only. A token without sub is refused: it
// would share one rate-limit bucket with every other sub-less token of its organization.
func TestJWTRefusalsAreStable(t *testing.T) {
	key := authtest.NewRSAKey(t, "k1", jwt.SigningMethodRS256, "RS256")
	other := authtest.NewRSAKey(t, "k2", jwt.SigningMethodRS256, "RS256")
	idp := authtest.NewIdP(t, key)
	db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "jwt.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sys := privacy.DecisionContext(t.Context(), privacy.Allow)
	org := db.Client.Organization.Create().SetName("acme").SaveX(sys)
	cfg := DefaultConfig()
	cfg.JWT = idpConfig(idp)
	var logs bytes.Buffer
	srv, err := New(t.Context(), cfg, db, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	claims := func() jwt.MapClaims { return authtest.With(authtest.ValidClaims(), "org_id", org.ID) }
	get := func(token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, hs.URL+"/dashboard/api/traps", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out struct{ Error string }
		_ = json.NewDecoder(res.Body).Decode(&out)
		return res.StatusCode, out.Error
	}
	if status, msg := get(key.Sign(t, claims())); status != http.StatusOK {
		t.Fatalf("valid token: %d %s", status, msg)
	}
	for name, tok := range map[string]string{
		"expired":        key.Sign(t, authtest.With(claims(), "exp", time.Now().Add(-time.Hour).Unix())),
		"wrong audience": key.Sign(t, authtest.With(claims(), "aud", "someone-else")),
		"unknown kid":    other.Sign(t, claims()),
		"not a JWT":      "a.b.c",
		"no sub":         key.Sign(t, authtest.Without(claims(), "sub")),
		"empty sub":      key.Sign(t, authtest.With(claims(), "sub", "")),
	} {
		status, msg := get(tok)
		if status != http.StatusUnauthorized || msg != "unauthenticated: invalid or expired token" {
			t.Errorf("%s: want 401 %q, got %d %q", name, "unauthenticated: invalid or expired token", status, msg)
		}
	}
	if !strings.Contains(logs.String(), "token is expired") {
		t.Errorf("the cause of a refusal is not logged:\n%s", logs.String())
	}
}

// idpConfig is the configuration that trusts p.
func idpConfig(p *authtest.IdP) auth.JWTConfig {
	return auth.JWTConfig{JWKSURL: p.JWKSURL(), Issuer: authtest.Issuer, Audience: authtest.Audience}
}

// jwtServer serves the real router over a fresh SQLite file with one organization,
// signing in with JWTs of an identity provider publishing key; its background work runs
// until the test ends.
func jwtServer(t *testing.T, key authtest.Key, configure func(*Config)) (*Server, *httptest.Server, *ent.Organization) {
	t.Helper()
	idp := authtest.NewIdP(t, key)
	db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "jwt.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	sys := privacy.DecisionContext(t.Context(), privacy.Allow)
	org := db.Client.Organization.Create().SetName("acme").SaveX(sys)
	db.Client.Site.Create().SetOrgID(org.ID).SetName("default").SaveX(sys)
	cfg := DefaultConfig()
	cfg.JWT = idpConfig(idp)
	if configure != nil {
		configure(&cfg)
	}
	srv, err := New(t.Context(), cfg, db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := srv.Start(ctx)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Stop(); cancel(); wait() })
	return srv, hs, org
}
