package botauth

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
)

// jwk is the part of a JSON Web Key a directory's Ed25519 key needs.
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
}

// ParseDirectory reads a key directory (a JWKS, draft-meunier-http-message-signatures-
// directory): its Ed25519 (OKP) keys by JWK thumbprint (RFC 7638, the keyid Web Bot Auth
// signs with), and by kid too when the key names one. Other keys are skipped; at most max
// are kept; a directory with none is an error.
func ParseDirectory(b []byte, max int) (map[string]ed25519.PublicKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, errors.New("not a JWKS")
	}
	keys := map[string]ed25519.PublicKey{}
	n := 0
	for _, raw := range set.Keys {
		if n >= max {
			break
		}
		var k jwk
		if json.Unmarshal(raw, &k) != nil || k.Kty != "OKP" || k.Crv != "Ed25519" {
			continue
		}
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			continue
		}
		pub := ed25519.PublicKey(x)
		keys[Thumbprint(k.X)] = pub
		if k.Kid != "" && len(k.Kid) <= maxKeyID {
			keys[k.Kid] = pub
		}
		n++
	}
	if n == 0 {
		return nil, errors.New("holds no Ed25519 key")
	}
	return keys, nil
}

// Thumbprint is the RFC 7638 thumbprint of an Ed25519 JWK whose x is given (base64url):
// SHA-256 of {"crv":"Ed25519","kty":"OKP","x":"…"}, base64url without padding.
func Thumbprint(x string) string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + x + `"}`))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// ttl is how long a directory is kept: its Cache-Control max-age (s-maxage ignored: we are
// no shared cache) within [MinTTL, MaxTTL]; no-store or no-cache keep it MinTTL (a signature
// burst must not fetch it per request); DefaultTTL without either.
func (v *Verifier) ttl(ccs []string) time.Duration {
	ttl := v.cfg.DefaultTTL
	for _, cc := range ccs {
		for _, d := range strings.Split(cc, ",") {
			d = strings.ToLower(strings.TrimSpace(d))
			switch {
			case d == "no-store" || d == "no-cache":
				return v.cfg.MinTTL
			case strings.HasPrefix(d, "max-age="):
				if n, err := strconv.ParseInt(strings.Trim(d[len("max-age="):], `"`), 10, 64); err == nil && n >= 0 {
					ttl = time.Duration(min(n, int64(v.cfg.MaxTTL/time.Second))) * time.Second
				}
			}
		}
	}
	return min(max(ttl, v.cfg.MinTTL), v.cfg.MaxTTL)
}
