package botauth_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/botauth"
	"github.com/flytrap/flytrap/botauth/botauthtest"
	"github.com/flytrap/flytrap/detect"
)

func signed(a *botauthtest.Agent, o botauthtest.Opts) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/docs/api", nil)
	a.Sign(r, o)
	return r
}

func verify(v *botauth.Verifier, r *http.Request) detect.Signature {
	return v.Verify(context.Background(), r, nil, false, time.Now())
}

// A signing agent with its directory on loopback (TLS): both forms of Signature-Agent
// verify; a tampered, expired, replayed, or foreign-key signature does not; the directory
// is fetched once for all of them.
func TestSignedAgentAgainstItsDirectory(t *testing.T) {
	a := botauthtest.NewAgent(t)
	cfg := a.Config()
	cfg.Wait = 10 * time.Second // a loopback fetch; the budget is tested below
	v := botauth.New(cfg, nil)
	defer v.Close()
	want := detect.Signature{State: detect.SignatureValid, Agent: strings.ToLower(a.Origin()), KeyID: a.KeyID}
	for _, form := range []botauthtest.Form{botauthtest.StringForm, botauthtest.DictForm} {
		if got := verify(v, signed(a, botauthtest.Opts{Form: form})); got != want {
			t.Fatalf("form %d: %+v, want %+v", form, got, want)
		}
	}
	if got := verify(v, signed(a, botauthtest.Opts{Nonce: "-"})); got != want {
		t.Fatalf("without a nonce: %+v", got)
	}

	tampered := signed(a, botauthtest.Opts{Form: botauthtest.DictForm})
	tampered.Host = "other.example"
	replay := signed(a, botauthtest.Opts{Nonce: "fixed-nonce"})
	_, foreign, _ := ed25519.GenerateKey(rand.Reader)
	cases := []struct {
		name   string
		r      *http.Request
		state  detect.SignatureState
		reason string
	}{
		{"tampered authority", tampered, detect.SignatureInvalid, "does not verify"},
		{"expired", signed(a, botauthtest.Opts{Created: time.Now().Add(-time.Hour), Expires: time.Now().Add(-50 * time.Minute)}), detect.SignatureInvalid, "expired"},
		{"created in the future", signed(a, botauthtest.Opts{Created: time.Now().Add(time.Hour)}), detect.SignatureInvalid, "future"},
		{"signed by another key under the agent's keyid", signed(a, botauthtest.Opts{Key: foreign}), detect.SignatureInvalid, "does not verify"},
		{"a key the directory does not list", signed(a, botauthtest.Opts{Key: foreign, KeyID: "not-in-the-directory"}), detect.SignatureInvalid, "not in"},
		{"first use of a nonce", replay, detect.SignatureValid, ""},
		{"the same signature again", replay, detect.SignatureReplayed, "nonce"},
	}
	for _, c := range cases {
		got := verify(v, c.r)
		if got.State != c.state || !strings.Contains(got.Reason, c.reason) {
			t.Errorf("%s: %+v, want %s (%q)", c.name, got, c.state, c.reason)
		}
	}
	if n := a.Fetches.Load(); n != 1 {
		t.Errorf("the directory was fetched %d times, want once (cached)", n)
	}
	if fetches, failures, _, _ := v.Stats(); fetches != 1 || failures != 0 {
		t.Errorf("stats: %d fetches, %d failures", fetches, failures)
	}
}

// The outbound guard: an agent naming a loopback directory is refused by default (no
// request reaches it), and the refusal is cached: a burst of such requests costs one try.
func TestDirectoryOnAPrivateAddressIsRefused(t *testing.T) {
	a := botauthtest.NewAgent(t)
	cfg := a.Config()
	cfg.Guard.AllowPrivate = false
	cfg.Wait = 10 * time.Second
	v := botauth.New(cfg, nil)
	defer v.Close()
	for range 20 {
		got := verify(v, signed(a, botauthtest.Opts{}))
		if got.State != detect.SignatureUnverifiable || !strings.Contains(got.Reason, "refused") {
			t.Fatalf("%+v", got)
		}
	}
	if n := a.Fetches.Load(); n != 0 {
		t.Fatalf("the private directory was reached %d times", n)
	}
	if fetches, failures, _, _ := v.Stats(); fetches != 1 || failures != 1 {
		t.Fatalf("stats: %d fetches, %d failures: the failure is not cached", fetches, failures)
	}
}

// A directory that does not answer: the request waits at most the budget, then records
// "unverifiable"; the requests after it during the fetch do not start another (single flight).
func TestSlowDirectoryIsUnverifiableWithinTheBudget(t *testing.T) {
	a := botauthtest.NewHangingAgent(t)
	cfg := a.Config()
	cfg.Wait = 20 * time.Millisecond
	cfg.FetchTimeout = time.Minute
	v := botauth.New(cfg, nil)
	defer v.Close()
	for range 5 {
		got := verify(v, signed(a, botauthtest.Opts{}))
		if got.State != detect.SignatureUnverifiable || !strings.Contains(got.Reason, "not fetched yet") {
			t.Fatalf("%+v", got)
		}
	}
	if fetches, _, _, _ := v.Stats(); fetches != 1 {
		t.Fatalf("%d fetches of one directory at once, want 1", fetches)
	}
}

// Fetches at once are capped: past the cap, a directory not cached is unverifiable at once
// (no wait, no fetch), so a million slow directories cost Fetches goroutines.
func TestFetchesAreCapped(t *testing.T) {
	slow := make([]*botauthtest.Agent, 3)
	for i := range slow {
		slow[i] = botauthtest.NewHangingAgent(t)
	}
	cfg := slow[0].Config()
	cfg.Fetches, cfg.Wait, cfg.FetchTimeout = 2, time.Millisecond, time.Minute
	v := botauth.New(cfg, nil)
	defer v.Close()
	for _, a := range slow {
		if got := verify(v, signed(a, botauthtest.Opts{})); got.State != detect.SignatureUnverifiable {
			t.Fatalf("%+v", got)
		}
	}
	fetches, _, busy, _ := v.Stats()
	if fetches != 2 || busy != 1 {
		t.Fatalf("%d fetches and %d refused for capacity, want 2 and 1", fetches, busy)
	}
}

// Keys rotate: a keyid missing from a directory read less than MinTTL ago is invalid; read
// longer ago, it triggers one re-read (unverifiable meanwhile), after which the new key
// verifies. A directory past its max-age serves its keys while it is read again.
func TestKeyRotationAndStaleDirectories(t *testing.T) {
	a := botauthtest.NewAgent(t) // max-age=300
	clock := time.Now()
	cfg := a.Config()
	cfg.Wait = 10 * time.Second
	cfg.Now = func() time.Time { return clock }
	v := botauth.New(cfg, nil)
	defer v.Close()
	at := func() time.Time { return clock }
	check := func(what string, o botauthtest.Opts, state detect.SignatureState, reason string) {
		t.Helper()
		r := signed(a, o)
		got := v.Verify(context.Background(), r, nil, false, at())
		if got.State != state || !strings.Contains(got.Reason, reason) {
			t.Fatalf("%s: %+v, want %s (%q)", what, got, state, reason)
		}
	}
	waitFetches := func(n int64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); a.Fetches.Load() < n; {
			if time.Now().After(deadline) {
				t.Fatalf("the directory was read %d times, want %d", a.Fetches.Load(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// until polls a check until the re-read is in the cache (unverifiable meanwhile).
	until := func(what string, state detect.SignatureState) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			got := v.Verify(context.Background(), signed(a, botauthtest.Opts{Created: at()}), nil, false, at())
			if got.State == state {
				return
			}
			if got.State != detect.SignatureUnverifiable || time.Now().After(deadline) {
				t.Fatalf("%s: %+v, want %s", what, got, state)
			}
		}
	}
	check("the first key", botauthtest.Opts{Created: at()}, detect.SignatureValid, "")
	a.Rotate(t)
	clock = clock.Add(30 * time.Second)
	check("a new key, directory fresh", botauthtest.Opts{Created: at()}, detect.SignatureInvalid, "is not in")
	clock = clock.Add(time.Minute)
	check("a new key, directory a minute old", botauthtest.Opts{Created: at()}, detect.SignatureUnverifiable, "reading it again")
	until("the new key after the re-read", detect.SignatureValid)
	if n := a.Fetches.Load(); n != 2 {
		t.Fatalf("the directory was read %d times, want 2", n)
	}
	clock = clock.Add(10 * time.Minute) // past max-age: the stale keys serve, a read starts
	check("stale directory", botauthtest.Opts{Created: at()}, detect.SignatureValid, "")
	waitFetches(3)
}

// Checks are rate limited: past the rate a signed request is unverifiable, not checked.
func TestChecksAreRateLimited(t *testing.T) {
	a := botauthtest.NewAgent(t)
	cfg := a.Config()
	cfg.Wait, cfg.Rate, cfg.Burst = 10*time.Second, 0.001, 1
	v := botauth.New(cfg, nil)
	defer v.Close()
	if got := verify(v, signed(a, botauthtest.Opts{})); got.State != detect.SignatureValid {
		t.Fatalf("first: %+v", got)
	}
	if got := verify(v, signed(a, botauthtest.Opts{})); got.State != detect.SignatureUnverifiable || !strings.Contains(got.Reason, "a second") {
		t.Fatalf("past the rate: %+v", got)
	}
	if _, _, _, limited := v.Stats(); limited != 1 {
		t.Fatalf("%d left unchecked, want 1", limited)
	}
}

// One client network gets a tenth of the checks a second: a flood of validly signed requests
// from one network leaves the other networks' signatures checked.
func TestChecksArePerNetworkToo(t *testing.T) {
	a := botauthtest.NewAgent(t)
	cfg := a.Config()
	cfg.Wait, cfg.Rate, cfg.Burst = 10*time.Second, 0.01, 100 // the instance's burst: 100; a network's: 10
	v := botauth.New(cfg, nil)
	defer v.Close()
	at := func(ip string) context.Context {
		return botauth.WithClient(context.Background(), netip.MustParseAddr(ip))
	}
	valid := 0
	for i := range 30 {
		// Three addresses of one /24: one network.
		if got := v.Verify(at(fmt.Sprintf("198.51.100.%d", 1+i%3)), signed(a, botauthtest.Opts{}), nil, false, time.Now()); got.State == detect.SignatureValid {
			valid++
		} else if !strings.Contains(got.Reason, "network") {
			t.Fatalf("request %d: %+v", i, got)
		}
	}
	if valid != 10 {
		t.Fatalf("%d of 30 checked from one network, want its burst of 10", valid)
	}
	for _, ip := range []string{"203.0.113.7", "2001:db8:1::7"} {
		if got := v.Verify(at(ip), signed(a, botauthtest.Opts{}), nil, false, time.Now()); got.State != detect.SignatureValid {
			t.Fatalf("another network (%s) after the flood: %+v", ip, got)
		}
	}
}

// Headers that are not a web-bot-auth signature: never a panic, never "valid".
func TestMalformedSignatures(t *testing.T) {
	v := botauth.New(botauth.Config{}, nil)
	defer v.Close()
	for _, h := range []map[string]string{
		{"Signature": "sig1=:AAAA:"},
		{"Signature-Input": `sig1=("@authority");created=1;keyid="k";tag="web-bot-auth"`},
		{"Signature": "garbage", "Signature-Input": "garbage"},
		{"Signature": "sig1=:AAAA:", "Signature-Input": `sig1=("@authority" "signature-agent");created=1;keyid="k"`, "Signature-Agent": `"https://a.example"`},
		{"Signature": "sig1=:AAAA:", "Signature-Input": `sig1=("@authority" "signature-agent");created=1;keyid="k";tag="web-bot-auth"`, "Signature-Agent": `"http://a.example"`},
		{"Signature": "sig1=:AAAA:", "Signature-Input": `sig1=("@authority" "signature-agent";key="x");created=1;keyid="k";tag="web-bot-auth"`, "Signature-Agent": `y="https://a.example"`},
		{"Signature": "sig1=:AAAA:", "Signature-Input": `sig1=("@authority");created=1;keyid="k";tag="web-bot-auth"`, "Signature-Agent": `"https://a.example"`},
		{"Signature": "sig1=:AAAA:", "Signature-Input": `sig1=("@authority" "signature-agent");created=1;keyid="k";alg="rsa-pss-sha512";tag="web-bot-auth"`, "Signature-Agent": `"https://a.example"`},
		{"Signature": "sig1=:AAAA:", "Signature-Input": `sig1=("@authority" "signature-agent");created=1;keyid="k";tag="web-bot-auth"`, "Signature-Agent": `"https://user:pw@a.example"`},
		{"Signature": "sig1=:AAAA:", "Signature-Input": `sig1=("@authority" "signature-agent");created=1;keyid="k";tag="web-bot-auth"`, "Signature-Agent": strings.Repeat("a", 5000)},
	} {
		r := httptest.NewRequest(http.MethodGet, "http://shop.example/", nil)
		for k, val := range h {
			r.Header.Set(k, val)
		}
		got := v.Verify(context.Background(), r, nil, false, time.Unix(1, 0))
		if got.State == detect.SignatureValid || got.State == detect.SignatureNone || got.Reason == "" {
			t.Errorf("%v: %+v", h, got)
		}
	}
}

// FuzzParse feeds the signature headers to the parser: never a panic, and an answer that
// is a parsed signature or a reason.
func FuzzParse(f *testing.F) {
	f.Add(`sig1=:AAAA:`, `sig1=("@authority" "signature-agent";key="sig1");created=1735689600;expires=1735693200;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";nonce="n";tag="web-bot-auth"`, `sig1="https://signature-agent.test"`)
	f.Add(`sig2=:AAAA:`, `sig2=("@authority" "signature-agent");created=1;keyid="k";tag="web-bot-auth"`, `"https://a.example/dir"`)
	f.Add(`a=:/w==:, b=?1`, `a=("@query-param";name="x" "content-digest");created=9;keyid="";tag="web-bot-auth", b=()`, `https://bare.example`)
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, sig, input, agent string) {
		h := http.Header{}
		if sig != "" {
			h.Set("Signature", sig)
		}
		if input != "" {
			h.Set("Signature-Input", input)
		}
		if agent != "" {
			h.Set("Signature-Agent", agent)
		}
		if !botauth.Signed(h) {
			return
		}
		p, err := botauth.Parse(h)
		if err == nil && (p == nil || p.Directory == "" || p.KeyID == "" || !strings.HasPrefix(p.Directory, "https://")) {
			t.Fatalf("parsed without a directory or a keyid: %+v", p)
		}
		if err == nil {
			return // Verify would fetch its directory: not from a fuzzer
		}
		v := botauth.New(botauth.Config{Wait: -1}, nil)
		defer v.Close()
		r := httptest.NewRequest(http.MethodGet, "http://shop.example/", nil)
		r.Header = h
		got := v.Verify(context.Background(), r, nil, false, time.Unix(1735689660, 0))
		if got.State == detect.SignatureValid || got.State == detect.SignatureNone || got.Reason == "" {
			t.Fatalf("a parse failure verified as %+v", got)
		}
	})
}

// One network holds at most one fetch slot: its hanging directories (eight hosts, or one
// host's eight paths, as a red-team pass found) leave the other slots to everyone else,
// and a Signature-Agent naming a path or query is never fetched (one directory an origin).
func TestFetchesAreBoundedPerNetwork(t *testing.T) {
	slow := make([]*botauthtest.Agent, 3)
	for i := range slow {
		slow[i] = botauthtest.NewHangingAgent(t)
	}
	honest := botauthtest.NewAgent(t)
	cfg := slow[0].Config()
	cfg.Guard = honest.Config().Guard
	cfg.Fetches, cfg.Wait, cfg.FetchTimeout = 2, 2*time.Second, time.Minute
	v := botauth.New(cfg, nil)
	defer v.Close()
	attacker := botauth.WithClient(context.Background(), netip.MustParseAddr("198.51.100.7"))
	for i, a := range slow {
		r := signed(a, botauthtest.Opts{})
		cfgWait := time.Now()
		got := v.Verify(attacker, r, nil, false, time.Now())
		if got.State != detect.SignatureUnverifiable {
			t.Fatalf("slow directory %d: %+v", i, got)
		}
		if i > 0 && time.Since(cfgWait) > time.Second {
			t.Fatalf("slow directory %d waited for a fetch it may not start", i)
		}
	}
	if fetches, _, busy, _ := v.Stats(); fetches != 1 || busy != 2 {
		t.Fatalf("one network started %d fetches (%d refused), want 1 (2)", fetches, busy)
	}
	// Another network's honest agent still gets the second slot, and verifies.
	other := botauth.WithClient(context.Background(), netip.MustParseAddr("203.0.113.9"))
	if got := v.Verify(other, signed(honest, botauthtest.Opts{}), nil, false, time.Now()); got.State != detect.SignatureValid {
		t.Fatalf("an honest agent beside the flood: %+v", got)
	}
	for _, agent := range []string{honest.Origin() + "/keys?x=1", honest.Origin() + "/?x=2", honest.Origin() + "/other/path"} {
		got := v.Verify(other, signed(honest, botauthtest.Opts{Agent: agent}), nil, false, time.Now())
		if got.State != detect.SignatureUnverifiable || !strings.Contains(got.Reason, "path or query") {
			t.Fatalf("Signature-Agent %q: %+v", agent, got)
		}
	}
}
