// Package authtest is a fake identity provider for tests: signing keys, a JWKS server the test
// can swap keys in, and claims that pass every check.
package authtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// The issuer and audience of the tokens ValidClaims makes.
const (
	Issuer   = "https://idp.example.com/"
	Audience = "flytrap-api"
)

// Key is a signing key held by the fake identity provider.
type Key struct {
	KID    string
	ALG    jwkset.ALG // "" publishes the JWK without an alg member
	Method jwt.SigningMethod
	Priv   crypto.Signer
}

// NewRSAKey is a new RSA key signing with method, published with alg.
func NewRSAKey(t testing.TB, kid string, method jwt.SigningMethod, alg jwkset.ALG) Key {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("generate rsa key: %v", err)
	}
	return Key{KID: kid, ALG: alg, Method: method, Priv: priv}
}

// NewECKey is a new ECDSA key on curve signing with method.
func NewECKey(t testing.TB, kid string, curve elliptic.Curve, method jwt.SigningMethod) Key {
	t.Helper()
	priv, err := ecdsa.GenerateKey(curve, rand.Reader)
	if err != nil {
		t.Fatalf("generate ecdsa key: %v", err)
	}
	return Key{KID: kid, ALG: jwkset.ALG(method.Alg()), Method: method, Priv: priv}
}

// NewEdKey is a new Ed25519 key.
func NewEdKey(t testing.TB, kid string) Key {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("generate ed25519 key: %v", err)
	}
	return Key{KID: kid, ALG: jwkset.AlgEdDSA, Method: jwt.SigningMethodEdDSA, Priv: priv}
}

// Sign returns a token for claims, with the key's kid in the header.
func (k Key) Sign(t testing.TB, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(k.Method, claims)
	if k.KID != "" {
		tok.Header["kid"] = k.KID
	}
	s, err := tok.SignedString(k.Priv)
	if err != nil {
		t.Fatalf("sign token: %v", err)
	}
	return s
}

// WithKID returns a copy of k that puts kid in the token header.
func (k Key) WithKID(kid string) Key {
	k.KID = kid
	return k
}

// IdP serves a JWKS that the test can swap at any time.
type IdP struct {
	srv     *httptest.Server
	jwks    atomic.Pointer[[]byte]
	Fetches atomic.Int64 // JWKS requests served
}

// NewIdP serves the public halves of keys as a JWKS until the test ends.
func NewIdP(t testing.TB, keys ...Key) *IdP {
	t.Helper()
	p := &IdP{}
	p.Publish(t, keys...)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.Fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*p.jwks.Load())
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// Publish replaces the served JWKS with the public halves of keys, built with
// jwkset exactly as an identity provider would publish them.
func (p *IdP) Publish(t testing.TB, keys ...Key) {
	t.Helper()
	store := jwkset.NewMemoryStorage()
	for _, k := range keys {
		jwk, err := jwkset.NewJWKFromKey(k.Priv.Public(), jwkset.JWKOptions{
			Metadata: jwkset.JWKMetadataOptions{KID: k.KID, ALG: k.ALG, USE: jwkset.UseSig},
		})
		if err != nil {
			t.Fatalf("build jwk %q: %v", k.KID, err)
		}
		if err := store.KeyWrite(t.Context(), jwk); err != nil {
			t.Fatalf("store jwk %q: %v", k.KID, err)
		}
	}
	raw, err := store.JSONPublic(t.Context())
	if err != nil {
		t.Fatalf("marshal jwks: %v", err)
	}
	if strings.Contains(string(raw), `"d"`) {
		t.Fatal("published jwks contains private key material")
	}
	b := []byte(raw)
	p.jwks.Store(&b)
}

// ValidClaims returns claims that pass every check; tests change one thing.
func ValidClaims() jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"iss":    Issuer,
		"aud":    Audience,
		"sub":    "user-123",
		"org_id": "org-1",
		"scope":  "read-write",
		"iat":    now.Unix(),
		"nbf":    now.Unix(),
		"exp":    now.Add(5 * time.Minute).Unix(),
	}
}

// With sets a claim.
func With(c jwt.MapClaims, key string, value any) jwt.MapClaims {
	c[key] = value
	return c
}

// Without removes a claim.
func Without(c jwt.MapClaims, key string) jwt.MapClaims {
	delete(c, key)
	return c
}

// JWKSURL is the address of the JWKS.
func (p *IdP) JWKSURL() string { return p.srv.URL + "/.well-known/jwks.json" }
