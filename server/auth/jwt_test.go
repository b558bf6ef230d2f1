package auth

import (
	"context"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/flytrap/flytrap/server/auth/authtest"
	"github.com/flytrap/flytrap/viewer"
)

// jwtConfig is the configuration that trusts p.
func jwtConfig(p *authtest.IdP) JWTConfig {
	return JWTConfig{JWKSURL: p.JWKSURL(), Issuer: authtest.Issuer, Audience: authtest.Audience}
}

func newTestVerifier(t testing.TB, cfg JWTConfig) *JWTVerifier {
	t.Helper()
	v, err := NewJWTVerifier(t.Context(), cfg)
	if err != nil {
		t.Fatalf("NewJWTVerifier: %v", err)
	}
	if v == nil {
		t.Fatal("NewJWTVerifier returned nil for an enabled config")
	}
	t.Cleanup(v.Close)
	return v
}

// expiresOf is when a token with these claims stops being accepted: exp plus the leeway.
func expiresOf(c jwt.MapClaims) time.Time {
	switch exp := c["exp"].(type) {
	case int64:
		return time.Unix(exp, 0).Add(Leeway)
	case float64:
		return time.Unix(int64(exp), 0).Add(Leeway)
	}
	return time.Time{}
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return string(b)
}

// assertInvalid checks that token is rejected with ErrInvalidToken and that
// the error does not echo the token (errors end up in logs).
func assertInvalid(t *testing.T, v *JWTVerifier, token string) {
	t.Helper()
	got, err := v.Verify(t.Context(), token)
	if err == nil {
		t.Fatalf("Verify succeeded with %+v, want error", got)
	}
	if !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("Verify error %q does not wrap ErrInvalidToken", err)
	}
	if got != (viewer.Viewer{}) {
		t.Fatalf("Verify returned viewer %+v along with error", got)
	}
	msg := err.Error()
	if token != "" && strings.Contains(msg, token) {
		t.Fatalf("error leaks the token: %s", msg)
	}
	for _, part := range strings.Split(token, ".") {
		if len(part) >= 8 && strings.Contains(msg, part) {
			t.Fatalf("error leaks a token segment: %s", msg)
		}
	}
}

// TestJWTVerify runs the bulk of the cases against one identity provider.
func TestJWTVerify(t *testing.T) {
	rs256 := authtest.NewRSAKey(t, "rsa-1", jwt.SigningMethodRS256, jwkset.AlgRS256)
	ps256 := authtest.NewRSAKey(t, "rsa-pss", jwt.SigningMethodPS256, jwkset.AlgPS256)
	// Published without "alg": then only our method allow-list stands
	// between an attacker and algorithm confusion.
	rsNoAlg := authtest.NewRSAKey(t, "rsa-noalg", jwt.SigningMethodRS512, "")
	es256 := authtest.NewECKey(t, "ec-256", elliptic.P256(), jwt.SigningMethodES256)
	es384 := authtest.NewECKey(t, "ec-384", elliptic.P384(), jwt.SigningMethodES384)
	es512 := authtest.NewECKey(t, "ec-521", elliptic.P521(), jwt.SigningMethodES512)
	ed := authtest.NewEdKey(t, "ed-1")
	unpublished := authtest.NewRSAKey(t, "rsa-unpublished", jwt.SigningMethodRS256, jwkset.AlgRS256)

	idp := authtest.NewIdP(t, rs256, ps256, rsNoAlg, es256, es384, es512, ed)
	v := newTestVerifier(t, jwtConfig(idp))

	t.Run("valid", func(t *testing.T) {
		tests := []struct {
			name  string
			key   authtest.Key
			claim jwt.MapClaims
			want  viewer.Viewer
		}{
			{"RS256", rs256, authtest.ValidClaims(), viewer.Viewer{OrgID: "org-1", Scope: viewer.ReadWrite, Subject: "user-123"}},
			{"PS256", ps256, authtest.ValidClaims(), viewer.Viewer{OrgID: "org-1", Scope: viewer.ReadWrite, Subject: "user-123"}},
			{"RS512 key without alg", rsNoAlg, authtest.ValidClaims(), viewer.Viewer{OrgID: "org-1", Scope: viewer.ReadWrite, Subject: "user-123"}},
			{"ES256", es256, authtest.ValidClaims(), viewer.Viewer{OrgID: "org-1", Scope: viewer.ReadWrite, Subject: "user-123"}},
			{"ES384", es384, authtest.ValidClaims(), viewer.Viewer{OrgID: "org-1", Scope: viewer.ReadWrite, Subject: "user-123"}},
			{"ES512", es512, authtest.ValidClaims(), viewer.Viewer{OrgID: "org-1", Scope: viewer.ReadWrite, Subject: "user-123"}},
			{"EdDSA", ed, authtest.ValidClaims(), viewer.Viewer{OrgID: "org-1", Scope: viewer.ReadWrite, Subject: "user-123"}},
			{
				"no kid tries every key", rs256.WithKID(""), authtest.ValidClaims(),
				viewer.Viewer{OrgID: "org-1", Scope: viewer.ReadWrite, Subject: "user-123"},
			},
			{
				"audience array containing ours", rs256, authtest.With(authtest.ValidClaims(), "aud", []string{"other", authtest.Audience}),
				viewer.Viewer{OrgID: "org-1", Scope: viewer.ReadWrite, Subject: "user-123"},
			},
			{
				"expired within leeway", rs256, authtest.With(authtest.ValidClaims(), "exp", time.Now().Add(-10*time.Second).Unix()),
				viewer.Viewer{OrgID: "org-1", Scope: viewer.ReadWrite, Subject: "user-123"},
			},
			{
				"issued slightly in the future", rs256, authtest.With(authtest.ValidClaims(), "iat", time.Now().Add(10*time.Second).Unix()),
				viewer.Viewer{OrgID: "org-1", Scope: viewer.ReadWrite, Subject: "user-123"},
			},
			{
				"no iat or nbf", rs256, authtest.Without(authtest.Without(authtest.ValidClaims(), "iat"), "nbf"),
				viewer.Viewer{OrgID: "org-1", Scope: viewer.ReadWrite, Subject: "user-123"},
			},
			{"scope read-only", rs256, authtest.With(authtest.ValidClaims(), "scope", "read-only"), viewer.Viewer{OrgID: "org-1", Scope: viewer.ReadOnly, Subject: "user-123"}},
			{"scope ADMIN", rs256, authtest.With(authtest.ValidClaims(), "scope", "ADMIN"), viewer.Viewer{OrgID: "org-1", Scope: viewer.Admin, Subject: "user-123"}},
			{
				"scope space separated", rs256, authtest.With(authtest.ValidClaims(), "scope", "openid profile read-write email"),
				viewer.Viewer{OrgID: "org-1", Scope: viewer.ReadWrite, Subject: "user-123"},
			},
			{
				"scope highest wins in string", rs256, authtest.With(authtest.ValidClaims(), "scope", "admin READ_ONLY read-write"),
				viewer.Viewer{OrgID: "org-1", Scope: viewer.Admin, Subject: "user-123"},
			},
			{
				"scope extra whitespace", rs256, authtest.With(authtest.ValidClaims(), "scope", "  read-only\t "),
				viewer.Viewer{OrgID: "org-1", Scope: viewer.ReadOnly, Subject: "user-123"},
			},
			{
				"scope array", rs256, authtest.With(authtest.ValidClaims(), "scope", []string{"openid", "READ_ONLY", "read-write"}),
				viewer.Viewer{OrgID: "org-1", Scope: viewer.ReadWrite, Subject: "user-123"},
			},
			{
				"scope array highest first", rs256, authtest.With(authtest.ValidClaims(), "scope", []string{"admin", "read-only"}),
				viewer.Viewer{OrgID: "org-1", Scope: viewer.Admin, Subject: "user-123"},
			},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := v.Verify(t.Context(), tt.key.Sign(t, tt.claim))
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				want := tt.want
				want.Expires = expiresOf(tt.claim)
				if got != want {
					t.Fatalf("Verify = %+v, want %+v", got, want)
				}
			})
		}
	})

	t.Run("invalid", func(t *testing.T) {
		now := time.Now()
		tests := []struct {
			name  string
			token func(t *testing.T) string
		}{
			{"empty", func(*testing.T) string { return "" }},
			{"garbage", func(*testing.T) string { return "not-a-jwt" }},
			{"three garbage segments", func(*testing.T) string { return "aaaaaaaaaa.bbbbbbbbbb.cccccccccc" }},
			{"too long", func(t *testing.T) string {
				return rs256.Sign(t, authtest.With(authtest.ValidClaims(), "pad", strings.Repeat("x", maxTokenBytes)))
			}},
			{"expired", func(t *testing.T) string {
				c := authtest.ValidClaims()
				c["iat"], c["nbf"], c["exp"] = now.Add(-2*time.Hour).Unix(), now.Add(-2*time.Hour).Unix(), now.Add(-time.Hour).Unix()
				return rs256.Sign(t, c)
			}},
			{"expired beyond leeway", func(t *testing.T) string {
				return rs256.Sign(t, authtest.With(authtest.ValidClaims(), "exp", now.Add(-Leeway-30*time.Second).Unix()))
			}},
			{"missing exp", func(t *testing.T) string { return rs256.Sign(t, authtest.Without(authtest.ValidClaims(), "exp")) }},
			{"exp not a number", func(t *testing.T) string {
				return rs256.Sign(t, authtest.With(authtest.ValidClaims(), "exp", "tomorrow"))
			}},
			{"not yet valid", func(t *testing.T) string {
				return rs256.Sign(t, authtest.With(authtest.ValidClaims(), "nbf", now.Add(5*time.Minute).Unix()))
			}},
			{"issued in the future", func(t *testing.T) string {
				return rs256.Sign(t, authtest.With(authtest.ValidClaims(), "iat", now.Add(5*time.Minute).Unix()))
			}},
			{"wrong issuer", func(t *testing.T) string {
				return rs256.Sign(t, authtest.With(authtest.ValidClaims(), "iss", "https://evil.example.com/"))
			}},
			{"missing issuer", func(t *testing.T) string { return rs256.Sign(t, authtest.Without(authtest.ValidClaims(), "iss")) }},
			{"wrong audience", func(t *testing.T) string {
				return rs256.Sign(t, authtest.With(authtest.ValidClaims(), "aud", "other-api"))
			}},
			{"wrong audience array", func(t *testing.T) string {
				return rs256.Sign(t, authtest.With(authtest.ValidClaims(), "aud", []string{"a", "b"}))
			}},
			{"missing audience", func(t *testing.T) string { return rs256.Sign(t, authtest.Without(authtest.ValidClaims(), "aud")) }},
			{"unknown kid", func(t *testing.T) string { return unpublished.Sign(t, authtest.ValidClaims()) }},
			{"unpublished key without kid", func(t *testing.T) string {
				return unpublished.WithKID("").Sign(t, authtest.ValidClaims())
			}},
			{"known kid, wrong key", func(t *testing.T) string {
				return unpublished.WithKID(rs256.KID).Sign(t, authtest.ValidClaims())
			}},
			{"kid not a string", func(t *testing.T) string {
				tok := jwt.NewWithClaims(jwt.SigningMethodRS256, authtest.ValidClaims())
				tok.Header["kid"] = 42
				s, err := tok.SignedString(rs256.Priv)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}},
			{"alg differs from jwk alg", func(t *testing.T) string {
				// rs256's JWK says RS256; an RS384 signature by the same key
				// must not be accepted under that kid.
				k := rs256
				k.Method = jwt.SigningMethodRS384
				return k.Sign(t, authtest.ValidClaims())
			}},
			{"alg none", func(t *testing.T) string {
				return b64(`{"alg":"none","typ":"JWT"}`) + "." + b64(mustJSON(t, authtest.ValidClaims())) + "."
			}},
			{"alg none with kid", func(t *testing.T) string {
				return b64(`{"alg":"none","typ":"JWT","kid":"rsa-1"}`) + "." + b64(mustJSON(t, authtest.ValidClaims())) + "."
			}},
			{"alg None", func(t *testing.T) string {
				return b64(`{"alg":"None","typ":"JWT"}`) + "." + b64(mustJSON(t, authtest.ValidClaims())) + "."
			}},
			{"HS256 signed with public key PEM", func(t *testing.T) string {
				return hmacWithPublicKey(t, rs256, jwt.SigningMethodHS256)
			}},
			{"HS256 signed with public key PEM, jwk without alg", func(t *testing.T) string {
				return hmacWithPublicKey(t, rsNoAlg, jwt.SigningMethodHS256)
			}},
			{"HS512 signed with public key PEM", func(t *testing.T) string {
				return hmacWithPublicKey(t, rs256, jwt.SigningMethodHS512)
			}},
			{"ES256 header on RSA key", func(t *testing.T) string {
				// Claims ES256 but names an RSA kid: key type mismatch.
				k := es256.WithKID(rsNoAlg.KID)
				return k.Sign(t, authtest.ValidClaims())
			}},
			{"tampered payload", func(t *testing.T) string {
				parts := strings.Split(rs256.Sign(t, authtest.ValidClaims()), ".")
				parts[1] = b64(mustJSON(t, authtest.With(authtest.ValidClaims(), "scope", "admin")))
				return strings.Join(parts, ".")
			}},
			{"signature stripped", func(t *testing.T) string {
				tok := rs256.Sign(t, authtest.ValidClaims())
				return tok[:strings.LastIndex(tok, ".")+1]
			}},
			{"missing org", func(t *testing.T) string { return rs256.Sign(t, authtest.Without(authtest.ValidClaims(), "org_id")) }},
			{"empty org", func(t *testing.T) string { return rs256.Sign(t, authtest.With(authtest.ValidClaims(), "org_id", "")) }},
			{"blank org", func(t *testing.T) string { return rs256.Sign(t, authtest.With(authtest.ValidClaims(), "org_id", "  ")) }},
			{"numeric org", func(t *testing.T) string { return rs256.Sign(t, authtest.With(authtest.ValidClaims(), "org_id", 17)) }},
			{"missing scope", func(t *testing.T) string { return rs256.Sign(t, authtest.Without(authtest.ValidClaims(), "scope")) }},
			{"no recognised scope", func(t *testing.T) string {
				return rs256.Sign(t, authtest.With(authtest.ValidClaims(), "scope", "openid profile email"))
			}},
			{"empty scope", func(t *testing.T) string { return rs256.Sign(t, authtest.With(authtest.ValidClaims(), "scope", "")) }},
			{"no recognised scope in array", func(t *testing.T) string {
				return rs256.Sign(t, authtest.With(authtest.ValidClaims(), "scope", []string{"openid", "superuser"}))
			}},
			{"empty scope array", func(t *testing.T) string {
				return rs256.Sign(t, authtest.With(authtest.ValidClaims(), "scope", []string{}))
			}},
			{"scope array with non-string", func(t *testing.T) string {
				return rs256.Sign(t, authtest.With(authtest.ValidClaims(), "scope", []any{"admin", 1}))
			}},
			{"scope number", func(t *testing.T) string { return rs256.Sign(t, authtest.With(authtest.ValidClaims(), "scope", 3)) }},
			{"sub not a string", func(t *testing.T) string { return rs256.Sign(t, authtest.With(authtest.ValidClaims(), "sub", 123)) }},
			{"no sub", func(t *testing.T) string { return rs256.Sign(t, authtest.Without(authtest.ValidClaims(), "sub")) }},
			{"blank sub", func(t *testing.T) string { return rs256.Sign(t, authtest.With(authtest.ValidClaims(), "sub", "  ")) }},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				assertInvalid(t, v, tt.token(t))
			})
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		tokens := []string{rs256.Sign(t, authtest.ValidClaims()), es256.Sign(t, authtest.ValidClaims()), ed.Sign(t, authtest.ValidClaims())}
		var wg sync.WaitGroup
		errs := make(chan error, 8*len(tokens))
		for range 8 {
			for _, tok := range tokens {
				wg.Go(func() {
					if _, err := v.Verify(t.Context(), tok); err != nil {
						errs <- err
					}
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("concurrent Verify: %v", err)
		}
	})
}

// hmacWithPublicKey builds the classic algorithm-confusion token: an HMAC
// signature keyed with the RSA public key's PEM, which an attacker can
// download, under a kid that exists in the JWKS.
func hmacWithPublicKey(t *testing.T, k authtest.Key, method jwt.SigningMethod) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k.Priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	secret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	tok := jwt.NewWithClaims(method, authtest.With(authtest.ValidClaims(), "scope", "admin"))
	tok.Header["kid"] = k.KID
	s, err := tok.SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestJWTVerifyCustomClaims(t *testing.T) {
	key := authtest.NewEdKey(t, "ed-1")
	idp := authtest.NewIdP(t, key)
	cfg := jwtConfig(idp)
	cfg.OrgClaim = "https://flytrap.dev/org"
	cfg.ScopeClaim = "permissions"
	v := newTestVerifier(t, cfg)

	c := authtest.ValidClaims()
	c["https://flytrap.dev/org"] = "org-42"
	c["permissions"] = []string{"read-only"}
	got, err := v.Verify(t.Context(), key.Sign(t, c))
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if want := (viewer.Viewer{OrgID: "org-42", Scope: viewer.ReadOnly, Subject: "user-123", Expires: expiresOf(c)}); got != want {
		t.Fatalf("Verify = %+v, want %+v", got, want)
	}

	// The default claim names must no longer be consulted.
	c = authtest.ValidClaims()
	c["permissions"] = "admin"
	assertInvalid(t, v, key.Sign(t, c)) // org only in org_id
	c = authtest.ValidClaims()
	c["https://flytrap.dev/org"] = "org-42"
	assertInvalid(t, v, key.Sign(t, c)) // scope only in scope
}

func TestJWTKeyRotation(t *testing.T) {
	oldKey := authtest.NewRSAKey(t, "2024-01", jwt.SigningMethodRS256, jwkset.AlgRS256)
	newKey := authtest.NewECKey(t, "2024-02", elliptic.P256(), jwt.SigningMethodES256)
	idp := authtest.NewIdP(t, oldKey)
	v := newTestVerifier(t, jwtConfig(idp))

	if _, err := v.Verify(t.Context(), oldKey.Sign(t, authtest.ValidClaims())); err != nil {
		t.Fatalf("Verify with the original key: %v", err)
	}
	if n := idp.Fetches.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times after start, want 1", n)
	}

	// The provider rotates: the new key is published and the old one dropped.
	idp.Publish(t, newKey)

	got, err := v.Verify(t.Context(), newKey.Sign(t, authtest.ValidClaims()))
	if err != nil {
		t.Fatalf("Verify with the rotated key: %v", err)
	}
	if got.OrgID != "org-1" || got.Scope != viewer.ReadWrite {
		t.Fatalf("Verify with the rotated key = %+v", got)
	}
	if n := idp.Fetches.Load(); n != 2 {
		t.Fatalf("JWKS fetched %d times after rotation, want 2", n)
	}

	// Known kids are served from the cache, without a fetch.
	if _, err := v.Verify(t.Context(), newKey.Sign(t, authtest.ValidClaims())); err != nil {
		t.Fatalf("Verify with the rotated key again: %v", err)
	}
	if n := idp.Fetches.Load(); n != 2 {
		t.Fatalf("JWKS fetched %d times for a known kid, want 2", n)
	}

	// A second unknown kid right away is rate limited: rejected at once, and
	// the identity provider is not asked again.
	stranger := authtest.NewEdKey(t, "random-kid")
	start := time.Now()
	assertInvalid(t, v, stranger.Sign(t, authtest.ValidClaims()))
	if d := time.Since(start); d > jwksHTTPTimeout/2 {
		t.Fatalf("rate-limited unknown kid took %v; it should fail without waiting", d)
	}
	if n := idp.Fetches.Load(); n != 2 {
		t.Fatalf("JWKS fetched %d times after a rate-limited unknown kid, want 2", n)
	}
}

func TestJWTUnknownKIDCancelledContext(t *testing.T) {
	key := authtest.NewEdKey(t, "ed-1")
	idp := authtest.NewIdP(t, key)
	v := newTestVerifier(t, jwtConfig(idp))

	// A caller that has gone away must not cost a JWKS fetch.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := v.Verify(ctx, authtest.NewEdKey(t, "other").Sign(t, authtest.ValidClaims()))
	if !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("Verify error = %v, want ErrInvalidToken", err)
	}
	if n := idp.Fetches.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times, want 1", n)
	}
}

func TestNewJWTVerifierStartupFailures(t *testing.T) {
	serve := func(status int, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	tests := []struct {
		name string
		url  string
		want string
	}{
		{"unreachable", closed.URL, "fetch jwks"},
		{"server error", serve(http.StatusInternalServerError, "oops"), "fetch jwks"},
		{"not found", serve(http.StatusNotFound, "not found"), "fetch jwks"},
		{"not json", serve(http.StatusOK, "<html>login</html>"), "fetch jwks"},
		{"no keys member", serve(http.StatusOK, `{}`), "no usable keys"},
		{"empty key set", serve(http.StatusOK, `{"keys":[]}`), "no usable keys"},
		{"broken key", serve(http.StatusOK, `{"keys":[{"kty":"RSA","kid":"x","n":"!!","e":"AQAB"}]}`), "fetch jwks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := JWTConfig{JWKSURL: tt.url, Issuer: authtest.Issuer, Audience: authtest.Audience}
			v, err := NewJWTVerifier(t.Context(), cfg)
			if err == nil {
				v.Close()
				t.Fatal("NewJWTVerifier succeeded, want error")
			}
			if v != nil {
				t.Fatalf("NewJWTVerifier returned a verifier along with %v", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not mention %q", err, tt.want)
			}
		})
	}

	t.Run("cancelled context", func(t *testing.T) {
		idp := authtest.NewIdP(t, authtest.NewEdKey(t, "ed-1"))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := NewJWTVerifier(ctx, jwtConfig(idp)); err == nil {
			t.Fatal("NewJWTVerifier succeeded with a cancelled context")
		}
	})
}

func TestNewJWTVerifierConfig(t *testing.T) {
	key := authtest.NewEdKey(t, "ed-1")
	idp := authtest.NewIdP(t, key)
	base := jwtConfig(idp)

	tests := []struct {
		name   string
		mutate func(*JWTConfig)
		want   string
	}{
		{"missing issuer", func(c *JWTConfig) { c.Issuer = "" }, "issuer"},
		{"blank issuer", func(c *JWTConfig) { c.Issuer = "  " }, "issuer"},
		{"missing audience", func(c *JWTConfig) { c.Audience = "" }, "audience"},
		{"relative url", func(c *JWTConfig) { c.JWKSURL = "/jwks.json" }, "absolute"},
		{"ftp url", func(c *JWTConfig) { c.JWKSURL = "ftp://idp.example.com/jwks.json" }, "absolute"},
		{"unparsable url", func(c *JWTConfig) { c.JWKSURL = "http://[::1" }, "jwks url"},
		{"credentials in url", func(c *JWTConfig) {
			c.JWKSURL = strings.Replace(c.JWKSURL, "http://", "http://user:hunter2@", 1)
		}, "credentials"},
		{"same claim for org and scope", func(c *JWTConfig) { c.OrgClaim, c.ScopeClaim = "x", "x" }, "differ"},
		{"org claim defaulting onto scope claim", func(c *JWTConfig) { c.ScopeClaim = "org_id" }, "differ"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base
			tt.mutate(&cfg)
			v, err := NewJWTVerifier(t.Context(), cfg)
			if err == nil {
				v.Close()
				t.Fatal("NewJWTVerifier succeeded, want error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not mention %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("error leaks the url password: %v", err)
			}
		})
	}
	if n := idp.Fetches.Load(); n != 0 {
		t.Fatalf("invalid configs fetched the JWKS %d times, want 0", n)
	}

	t.Run("whitespace is trimmed", func(t *testing.T) {
		cfg := JWTConfig{
			JWKSURL:  " " + base.JWKSURL + "\n",
			Issuer:   authtest.Issuer + " ",
			Audience: "\t" + authtest.Audience,
			OrgClaim: " ",
		}
		v := newTestVerifier(t, cfg)
		if _, err := v.Verify(t.Context(), key.Sign(t, authtest.ValidClaims())); err != nil {
			t.Fatalf("Verify: %v", err)
		}
	})
}

func TestJWTDisabled(t *testing.T) {
	for _, u := range []string{"", "   "} {
		v, err := NewJWTVerifier(t.Context(), JWTConfig{JWKSURL: u, Issuer: "ignored"})
		if err != nil || v != nil {
			t.Fatalf("NewJWTVerifier(JWKSURL=%q) = %v, %v; want nil, nil", u, v, err)
		}
		if (JWTConfig{JWKSURL: u}).Enabled() {
			t.Fatalf("Enabled() with JWKSURL %q = true", u)
		}
		// A nil verifier must reject, not panic: the HTTP layer may call it
		// without checking whether JWT auth is configured.
		if _, err := v.Verify(t.Context(), "a.b.c"); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("nil Verify error = %v, want ErrInvalidToken", err)
		}
		v.Close()
	}
}

func TestJWTCloseKeepsVerifying(t *testing.T) {
	key := authtest.NewEdKey(t, "ed-1")
	idp := authtest.NewIdP(t, key)
	v := newTestVerifier(t, jwtConfig(idp))
	v.Close()
	v.Close() // idempotent
	if _, err := v.Verify(t.Context(), key.Sign(t, authtest.ValidClaims())); err != nil {
		t.Fatalf("Verify after Close: %v", err)
	}
}

func BenchmarkJWTVerify(b *testing.B) {
	key := authtest.NewRSAKey(b, "rsa-1", jwt.SigningMethodRS256, jwkset.AlgRS256)
	idp := authtest.NewIdP(b, key)
	v := newTestVerifier(b, jwtConfig(idp))
	token := key.Sign(b, authtest.ValidClaims())
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(ctx, token); err != nil {
			b.Fatal(err)
		}
	}
}
