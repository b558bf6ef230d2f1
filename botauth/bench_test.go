package botauth_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/flytrap/flytrap/botauth"
	"github.com/flytrap/flytrap/botauth/botauthtest"
	"github.com/flytrap/flytrap/flytraptest/testdb"
)

// timed runs f b.N times and reports, beside ns/op (wall clock, which a loaded machine
// inflates), the process's CPU time per operation.
func timed(b *testing.B, f func(i int)) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu := testdb.ProcessCPU()
	for i := range b.N {
		f(i)
	}
	b.StopTimer()
	b.ReportMetric(float64(testdb.ProcessCPU()-cpu)/float64(b.N), "cpu-ns/op")
}

// What a signed request costs the trap listener (docs/benchmarks.md, "Signed agents"):
// requests are signed before the clock starts, each with its own nonce.
func signedRequests(b *testing.B, a *botauthtest.Agent, o botauthtest.Opts) []*http.Request {
	rs := make([]*http.Request, b.N)
	for i := range rs {
		rs[i] = httptest.NewRequest(http.MethodGet, "http://shop.example/docs/api", nil)
		a.Sign(rs[i], o)
	}
	return rs
}

func warmVerifier(b *testing.B, a *botauthtest.Agent) *botauth.Verifier {
	cfg := a.Config()
	cfg.Wait = 10 * time.Second
	cfg.Rate = 1e9 // what one check costs, not the limiter's refusal
	v := botauth.New(cfg, nil)
	b.Cleanup(v.Close)
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/", nil)
	a.Sign(r, botauthtest.Opts{})
	if f := v.Verify(context.Background(), r, nil, false, time.Now()); f.Agent == "" || f.Reason != "" {
		b.Fatalf("warming: %+v", f)
	}
	return v
}

// A valid signature, its directory cached: parse, Ed25519 verify (httpsig), nonce remembered.
func BenchmarkVerifyValidCached(b *testing.B) {
	a := botauthtest.NewAgent(b)
	v := warmVerifier(b, a)
	rs := signedRequests(b, a, botauthtest.Opts{Form: botauthtest.DictForm})
	now := time.Now()
	timed(b, func(i int) { v.Verify(context.Background(), rs[i], nil, false, now) })
}

// A forged signature (another key under the agent's keyid), directory cached: the full
// verification, failing at the end — what a flood of forged signatures costs.
func BenchmarkVerifyForgedCached(b *testing.B) {
	a := botauthtest.NewAgent(b)
	v := warmVerifier(b, a)
	other := botauthtest.NewAgent(b)
	rs := signedRequests(b, a, botauthtest.Opts{Key: other.Priv})
	now := time.Now()
	timed(b, func(i int) { v.Verify(context.Background(), rs[i], nil, false, now) })
}

// Signatures naming directories that never answer, every fetch slot taken: each request is
// "unverifiable" at once, with no wait and no new fetch (the million-slow-directories attack).
func BenchmarkVerifySlowDirectoriesAtCapacity(b *testing.B) {
	slow := []*botauthtest.Agent{botauthtest.NewHangingAgent(b), botauthtest.NewHangingAgent(b)}
	cfg := slow[0].Config()
	cfg.Fetches, cfg.FetchTimeout, cfg.Wait = 1, time.Minute, time.Millisecond
	v := botauth.New(cfg, nil)
	b.Cleanup(v.Close)
	// The first directory takes the one slot; every request below names the second.
	v.Verify(context.Background(), signedRequests(&testing.B{N: 1}, slow[0], botauthtest.Opts{})[0], nil, false, time.Now())
	rs := signedRequests(b, slow[1], botauthtest.Opts{})
	now := time.Now()
	timed(b, func(i int) { v.Verify(context.Background(), rs[i], nil, false, now) })
}

// An unsigned request: the listener's whole cost is botauth.Signed.
func BenchmarkUnsigned(b *testing.B) {
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/", nil)
	r.Header.Set("User-Agent", "Mozilla/5.0")
	r.Header.Set("Accept", "*/*")
	timed(b, func(int) {
		if botauth.Signed(r.Header) {
			b.Fatal("signed")
		}
	})
}

// The Ed25519 verification alone, for the share of the crypto in a check.
func BenchmarkEd25519Verify(b *testing.B) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	msg := []byte("\"@authority\": shop.example\n\"signature-agent\": \"https://agent.example\"\n\"@signature-params\": (\"@authority\" \"signature-agent\");created=1;keyid=\"k\";tag=\"web-bot-auth\"")
	sig := ed25519.Sign(priv, msg)
	timed(b, func(int) {
		if !ed25519.Verify(pub, msg, sig) {
			b.Fatal("does not verify")
		}
	})
}
