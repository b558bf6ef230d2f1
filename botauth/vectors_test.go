package botauth

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/detect"
)

// The Web Bot Auth architecture draft's test vectors, as Cloudflare's web-bot-auth
// repository publishes them (testdata/web_bot_auth_architecture_v1.json: the string form
// of Signature-Agent; _v2.json: the dictionary form), Apache-2.0. The Ed25519 key is RFC
// 9421's test-key-ed25519 (Appendix B.1.4).
type vector struct {
	Key struct {
		Kty, Crv, X string
	} `json:"key"`
	TargetURL      string `json:"target_url"`
	CreatedMS      int64  `json:"created_ms"`
	Label          string `json:"label"`
	Signature      string `json:"signature"`
	SignatureInput string `json:"signature_input"`
	SignatureAgent string `json:"signature_agent"`
}

func loadVectors(t *testing.T, file string) []vector {
	t.Helper()
	b, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	return vs
}

func (vc vector) request() *http.Request {
	r := httptest.NewRequest(http.MethodGet, vc.TargetURL, nil)
	r.Header.Set("Signature", vc.Signature)
	r.Header.Set("Signature-Input", vc.SignatureInput)
	if vc.SignatureAgent != "" {
		r.Header.Set("Signature-Agent", vc.SignatureAgent)
	}
	return r
}

// rfcKey is RFC 9421's test-key-ed25519 (B.1.4), whose JWK x the vectors carry.
const rfcKeyX = "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"

func rfcKey(t *testing.T) ed25519.PublicKey {
	x, err := base64.RawURLEncoding.DecodeString(rfcKeyX)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// preload puts a directory in v's cache as a fetch would (the vectors name
// https://signature-agent.test, which no test can serve).
func preload(v *Verifier, url string, keys map[string]ed25519.PublicKey) {
	now := v.now()
	v.dirs.Add(url, &directory{keys: keys, fetched: now, read: now, expires: now.Add(time.Hour)})
}

func TestThumbprintOfTheRFCKey(t *testing.T) {
	// The keyid the vectors sign with is the key's JWK thumbprint.
	if got, want := Thumbprint(rfcKeyX), "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U"; got != want {
		t.Fatalf("thumbprint %s, want %s", got, want)
	}
}

func TestDraftVectors(t *testing.T) {
	const dir = "https://signature-agent.test" + WellKnown
	for _, file := range []string{"web_bot_auth_architecture_v1.json", "web_bot_auth_architecture_v2.json"} {
		for _, vc := range loadVectors(t, file) {
			name := file[len("web_bot_auth_architecture_"):len(file)-len(".json")] + "/" + vc.Key.Kty + "/" + vc.Label
			t.Run(name, func(t *testing.T) {
				v := New(Config{}, nil)
				defer v.Close()
				preload(v, dir, map[string]ed25519.PublicKey{Thumbprint(rfcKeyX): rfcKey(t)})
				at := time.UnixMilli(vc.CreatedMS).Add(time.Minute)
				got := v.Verify(context.Background(), vc.request(), nil, false, at)
				switch {
				case vc.Key.Kty != "OKP":
					// RSA-PSS is the drafts' too, but only Ed25519 is verified here: never "invalid".
					if got.State != detect.SignatureUnverifiable {
						t.Fatalf("an RSA vector: %+v, want unverifiable", got)
					}
				case vc.SignatureAgent == "":
					// No Signature-Agent: no directory to find the key in. The signature itself
					// verifies (checked below with the key given).
					if got.State != detect.SignatureUnverifiable || !strings.Contains(got.Reason, "no Signature-Agent") {
						t.Fatalf("no Signature-Agent: %+v", got)
					}
					p, err := Parse(vc.request().Header)
					if p == nil || err == nil {
						t.Fatalf("parse: %v %v", p, err)
					}
					if err := verifyMessage(vc.request(), nil, false, p, rfcKey(t)); err != nil {
						t.Fatalf("the vector's signature does not verify: %v", err)
					}
				default:
					want := detect.Signature{State: detect.SignatureValid, Agent: "https://signature-agent.test", KeyID: Thumbprint(rfcKeyX)}
					if got != want {
						t.Fatalf("got %+v, want %+v", got, want)
					}
					// The same request replayed: its nonce was seen.
					if again := v.Verify(context.Background(), vc.request(), nil, false, at); again.State != detect.SignatureReplayed {
						t.Fatalf("replayed: %+v", again)
					}
					// Tampered: another authority than the one signed.
					r := vc.request()
					r.Host = "example.org"
					if bad := New(Config{}, nil); true {
						defer bad.Close()
						preload(bad, dir, map[string]ed25519.PublicKey{Thumbprint(rfcKeyX): rfcKey(t)})
						if f := bad.Verify(context.Background(), r, nil, false, at); f.State != detect.SignatureInvalid {
							t.Fatalf("tampered authority: %+v", f)
						}
					}
					// Out of its window.
					if f := v.Verify(context.Background(), vc.request(), nil, false, at.Add(48*time.Hour)); f.State != detect.SignatureInvalid || !strings.Contains(f.Reason, "expired") {
						t.Fatalf("expired: %+v", f)
					}
				}
			})
		}
	}
}

// RFC 9421 Appendix B.2.6: signing a request with Ed25519 (test-key-ed25519). It carries no
// web-bot-auth tag (Verify calls it unverifiable); its signature verifies through the same
// path (httpsig over the covered fields), and fails once a covered field changes.
func TestRFC9421Ed25519Example(t *testing.T) {
	body := `{"hello": "world"}`
	req := func() *http.Request {
		r := httptest.NewRequest(http.MethodPost, "http://example.com/foo?param=Value&Pet=dog", strings.NewReader(body))
		r.Header.Set("Date", "Tue, 20 Apr 2021 02:07:55 GMT")
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Content-Digest", "sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:")
		r.Header.Set("Content-Length", "18")
		r.Header.Set("Signature-Input", `sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"`)
		r.Header.Set("Signature", `sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:`)
		return r
	}
	v := New(Config{}, nil)
	defer v.Close()
	if f := v.Verify(context.Background(), req(), []byte(body), false, time.Unix(1618884473, 0)); f.State != detect.SignatureUnverifiable {
		t.Fatalf("untagged: %+v", f)
	}
	p := &Parsed{Label: "sig-b26", KeyID: "test-key-ed25519", Created: 1618884473,
		Components: []string{"date", "@method", "@path", "@authority", "content-type", "content-length"}}
	if err := verifyMessage(req(), []byte(body), false, p, rfcKey(t)); err != nil {
		t.Fatalf("B.2.6 does not verify: %v", err)
	}
	r := req()
	r.Method = http.MethodPut
	if err := verifyMessage(r, []byte(body), false, p, rfcKey(t)); err == nil {
		t.Fatal("B.2.6 verified with another method")
	}
}
