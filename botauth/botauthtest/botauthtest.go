// Package botauthtest is a signed agent for tests: an Ed25519 key, its key directory
// served over TLS on loopback, and a signer of requests per RFC 9421 and the Web Bot Auth
// drafts, written out by hand (string and dictionary forms of Signature-Agent), so the
// verifier is checked against an independent implementation.
package botauthtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flytrap/flytrap/botauth"
	"github.com/flytrap/flytrap/webhook"
)

// Agent is a signing agent with its directory server.
type Agent struct {
	Priv  ed25519.PrivateKey
	KeyID string // the JWK thumbprint of the public key
	Dir   *httptest.Server
	// Fetches counts the directory's requests.
	Fetches atomic.Int64
	hang    chan struct{} // non-nil: the directory answers only when the test ends
	served  atomic.Pointer[string]
}

// Rotate gives the agent a new key, which its directory serves from now on in place of
// the old one.
func (a *Agent) Rotate(t testing.TB) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	x := base64.RawURLEncoding.EncodeToString(priv.Public().(ed25519.PublicKey))
	a.Priv, a.KeyID = priv, botauth.Thumbprint(x)
	a.served.Store(&x)
}

// NewAgent starts an agent whose directory answers at once; NewHangingAgent one whose
// directory never answers while the test runs (a slow or dead agent).
func NewAgent(t testing.TB) *Agent { return newAgent(t, false) }

func NewHangingAgent(t testing.TB) *Agent { return newAgent(t, true) }

func newAgent(t testing.TB, hang bool) *Agent {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{Priv: priv}
	x := base64.RawURLEncoding.EncodeToString(priv.Public().(ed25519.PublicKey))
	a.KeyID = botauth.Thumbprint(x)
	a.served.Store(&x)
	if hang {
		a.hang = make(chan struct{})
	}
	a.Dir = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.Fetches.Add(1)
		if a.hang != nil {
			select {
			case <-a.hang:
			case <-r.Context().Done():
			}
			return
		}
		if r.URL.Path != botauth.WellKnown {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/http-message-signatures-directory+json")
		w.Header().Set("Cache-Control", "max-age=300")
		fmt.Fprintf(w, `{"keys":[{"kty":"OKP","crv":"Ed25519","x":%q},{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`, *a.served.Load())
	}))
	t.Cleanup(a.Dir.Close)
	if hang {
		t.Cleanup(func() { close(a.hang) }) // runs before Close, which waits for the handler
	}
	return a
}

// Origin is the agent's origin, as a Signature-Agent names it.
func (a *Agent) Origin() string { return a.Dir.URL }

// Config lets a verifier reach the agent: loopback allowed through the guard, the test
// server's certificate trusted.
func (a *Agent) Config() botauth.Config {
	c := botauth.DefaultConfig()
	c.Guard = webhook.Guard{AllowPrivate: true}
	c.RootCAs = a.Dir.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	return c
}

// Form is how Signature-Agent is sent.
type Form int

const (
	StringForm Form = iota // Signature-Agent: "https://…", covered as "signature-agent"
	DictForm               // Signature-Agent: sig1="https://…", covered as "signature-agent";key="sig1"
)

// Opts says how to sign.
type Opts struct {
	Form             Form
	Created, Expires time.Time // zero: now, and a minute later
	Nonce            string    // "": a random one; "-": none
	Key              ed25519.PrivateKey
	KeyID            string // "": the agent's
	Agent            string // "": the agent's origin
}

// Sign sets Signature-Agent, Signature-Input and Signature on r, covering @authority and
// Signature-Agent, tagged web-bot-auth.
func (a *Agent) Sign(r *http.Request, o Opts) {
	if o.Created.IsZero() {
		o.Created = time.Now()
	}
	if o.Expires.IsZero() {
		o.Expires = o.Created.Add(time.Minute)
	}
	if o.Key == nil {
		o.Key = a.Priv
	}
	if o.KeyID == "" {
		o.KeyID = a.KeyID
	}
	if o.Agent == "" {
		o.Agent = a.Origin()
	}
	switch o.Nonce {
	case "":
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		o.Nonce = base64.StdEncoding.EncodeToString(b)
	case "-":
		o.Nonce = ""
	}
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	var agentComponent, agentValue string
	switch o.Form {
	case DictForm:
		agentComponent, agentValue = `"signature-agent";key="sig1"`, fmt.Sprintf("%q", o.Agent)
		r.Header.Set("Signature-Agent", "sig1="+agentValue)
	default:
		agentComponent, agentValue = `"signature-agent"`, fmt.Sprintf("%q", o.Agent)
		r.Header.Set("Signature-Agent", agentValue)
	}
	params := fmt.Sprintf(`("@authority" %s);created=%d;expires=%d;keyid=%q`, agentComponent, o.Created.Unix(), o.Expires.Unix(), o.KeyID)
	if o.Nonce != "" {
		params += fmt.Sprintf(";nonce=%q", o.Nonce)
	}
	params += `;tag="web-bot-auth"`
	var base strings.Builder
	fmt.Fprintf(&base, "\"@authority\": %s\n", strings.ToLower(host))
	fmt.Fprintf(&base, "%s: %s\n", agentComponent, agentValue)
	fmt.Fprintf(&base, "\"@signature-params\": %s", params)
	sig := ed25519.Sign(o.Key, []byte(base.String()))
	r.Header.Set("Signature-Input", "sig1="+params)
	r.Header.Set("Signature", "sig1=:"+base64.StdEncoding.EncodeToString(sig)+":")
}
