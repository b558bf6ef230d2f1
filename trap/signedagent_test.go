package trap_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/botauth/botauthtest"
	"github.com/flytrap/flytrap/detect"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// Signed agents through the real trap listener and database (issue 25 item 4): a signing
// client whose key directory is served on loopback (the guard allows loopback in this
// configuration only). Each case is its own session (its own user agent); the session
// detail (REST) carries the signal whose detail says "verified: <agent> (key <kid>)" or
// why not, and the verdict follows.
func TestSignedAgentsOnTheTrapListener(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		agent := botauthtest.NewAgent(t)
		dead := botauthtest.NewHangingAgent(t)
		env := ft.Start(t, b, func(c *server.Config) {
			c.Trap.Signatures = agent.Config()
			// The longest budget allowed: the dead directory's request waits this long and no
			// more (its fetch goes on, up to FetchTimeout, unwaited).
			c.Trap.Signatures.Wait = time.Second
			c.Trap.Signatures.FetchTimeout = time.Minute
		})
		tn := env.Tenant("acme")
		env.MustGraphQL(tn.ReadWrite, `mutation { createTrap(input:{name:"docs", type: page, path: "/internal/api-docs"}) { id } }`, nil)

		send := func(ua string, sign func(r *http.Request)) int {
			t.Helper()
			r, err := http.NewRequest(http.MethodGet, env.Trap.URL+"/internal/api-docs", nil)
			if err != nil {
				t.Fatal(err)
			}
			r.Header.Set("User-Agent", ua)
			if sign != nil {
				sign(r)
			}
			res, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			return res.StatusCode
		}
		// The agent's directory cached first (a loaded machine may take longer than the budget
		// for a first fetch): a warm-up session is polled until it reads verified.
		for deadline := time.Now().Add(30 * time.Second); ; {
			send("warm-up agent", func(r *http.Request) { agent.Sign(r, botauthtest.Opts{}) })
			s := signedSession(t, env, tn.ReadOnly, "warm-up agent")
			d := env.MustGraphQL(tn.ReadOnly, `query($id: ID!) { node(id: $id) { ... on Session { signature } } }`, map[string]any{"id": s.ID})
			if sig, _ := ft.Dig(d, "node", "signature").(string); strings.HasPrefix(sig, "verified: ") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the agent's directory was not fetched within 30 s")
			}
			time.Sleep(50 * time.Millisecond)
		}
		_, foreign, _ := ed25519.GenerateKey(rand.Reader)
		replayed := func(r *http.Request) {}
		{
			r, _ := http.NewRequest(http.MethodGet, env.Trap.URL+"/internal/api-docs", nil)
			agent.Sign(r, botauthtest.Opts{Nonce: "once-only"})
			replayed = func(q *http.Request) {
				for _, h := range []string{"Signature", "Signature-Input", "Signature-Agent"} {
					q.Header[h] = r.Header[h]
				}
			}
		}
		origin := strings.ToLower(agent.Origin())
		type want struct {
			signal, detail, class string
			notSignal             string
		}
		cases := []struct {
			ua   string
			sign []func(r *http.Request)
			want want
		}{
			// A GPTBot from loopback is outside OpenAI's ranges: unsigned, an unverified claim;
			// signed by an origin that is not OpenAI's (the test's directory), the signature is
			// verified but proves only its signer: still an unverified claim, never CRAWLER_VERIFIED.
			{"Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot) signed-string",
				[]func(*http.Request){func(r *http.Request) { agent.Sign(r, botauthtest.Opts{Form: botauthtest.StringForm}) }},
				want{detect.SignalSignedAgentVerified, "verified: " + origin + " (key " + agent.KeyID + ")", detect.ClassBot, detect.SignalCrawlerVerified}},
			{"Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot) unsigned", []func(*http.Request){nil},
				want{detect.SignalUnverifiedBotClaim, "", detect.ClassBot, detect.SignalSignedAgentVerified}},
			{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 signed-dict",
				[]func(*http.Request){func(r *http.Request) { agent.Sign(r, botauthtest.Opts{Form: botauthtest.DictForm}) }},
				want{detect.SignalSignedAgentVerified, "verified: " + origin + " (key " + agent.KeyID + ")", detect.ClassBot, ""}},
			{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 tampered",
				[]func(*http.Request){func(r *http.Request) {
					r.Host = "signed-for.example" // signed for another authority than the one it reaches
					agent.Sign(r, botauthtest.Opts{Form: botauthtest.DictForm})
					r.Host = ""
				}},
				want{detect.SignalSignatureInvalid, "does not verify", detect.ClassBot, detect.SignalSignedAgentVerified}},
			{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 expired",
				[]func(*http.Request){func(r *http.Request) {
					agent.Sign(r, botauthtest.Opts{Created: time.Now().Add(-2 * time.Hour), Expires: time.Now().Add(-time.Hour)})
				}},
				want{detect.SignalSignatureInvalid, "expired", detect.ClassBot, detect.SignalSignedAgentVerified}},
			{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 replayed",
				[]func(*http.Request){replayed, replayed},
				want{detect.SignalSignatureInvalid, "replayed signature from " + origin, detect.ClassBot, ""}},
			{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 unknown-key",
				[]func(*http.Request){func(r *http.Request) { agent.Sign(r, botauthtest.Opts{Key: foreign, KeyID: "a-key-nobody-published"}) }},
				want{detect.SignalSignatureInvalid, "is not in " + origin + "'s directory", detect.ClassBot, detect.SignalSignedAgentVerified}},
			{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 directory-down",
				[]func(*http.Request){func(r *http.Request) { dead.Sign(r, botauthtest.Opts{}) }},
				want{detect.SignalSignatureUnverifiable, "not fetched yet", detect.ClassHuman, detect.SignalSignatureInvalid}},
		}
		for _, c := range cases {
			for _, sign := range c.sign {
				if code := send(c.ua, sign); code != http.StatusOK {
					t.Fatalf("%s: answered %d", c.ua, code)
				}
			}
		}
		for _, c := range cases {
			s := signedSession(t, env, tn.ReadOnly, c.ua)
			found := false
			for _, sg := range s.Signals {
				if sg.Name == c.want.signal && strings.Contains(sg.Detail, c.want.detail) {
					found = true
				}
				if c.want.notSignal != "" && sg.Name == c.want.notSignal {
					t.Errorf("%s: %s fired: %+v", c.ua, c.want.notSignal, s.Signals)
				}
			}
			if !found {
				t.Errorf("%s: no %s with %q: %+v", c.ua, c.want.signal, c.want.detail, s.Signals)
			}
			if s.Classification != c.want.class {
				t.Errorf("%s: classified %s, want %s", c.ua, s.Classification, c.want.class)
			}
			// The dashboard's "why this verdict" reads the session's signature in words.
			d := env.MustGraphQL(tn.ReadOnly, `query($id: ID!) { node(id: $id) { ... on Session { signature } } }`, map[string]any{"id": s.ID})
			sig, _ := ft.Dig(d, "node", "signature").(string)
			switch {
			case c.want.signal == detect.SignalUnverifiedBotClaim:
				if ft.Dig(d, "node", "signature") != nil {
					t.Errorf("%s: an unsigned session's signature: %v", c.ua, sig)
				}
			case !strings.Contains(sig, c.want.detail):
				t.Errorf("%s: signature %q, want %q in it", c.ua, sig, c.want.detail)
			}
			// REST's session detail says the same.
			if rest := s.Signature; (rest == nil) != (ft.Dig(d, "node", "signature") == nil) || rest != nil && *rest != sig {
				t.Errorf("%s: REST signature %v, GraphQL %q", c.ua, rest, sig)
			}
		}
		if n := agent.Fetches.Load(); n != 1 {
			t.Errorf("the agent's directory was fetched %d times, want once", n)
		}
	})
}

type signedSignal struct {
	Name   string `json:"name"`
	Detail string `json:"detail"`
}

type signedDetail struct {
	ID             string         `json:"id"`
	Classification string         `json:"classification"`
	Signals        []signedSignal `json:"signals"`
	Signature      *string        `json:"signature"`
}

// signedSession is the REST session detail of the session of user agent ua (the only one).
func signedSession(t *testing.T, env *ft.Env, key, ua string) signedDetail {
	t.Helper()
	res, body := env.Get(key, "/dashboard/api/sessions?limit=100")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("sessions: %d %s", res.StatusCode, body)
	}
	var list struct {
		Data []struct {
			ID        string `json:"id"`
			UserAgent string `json:"user_agent"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Data {
		if s.UserAgent != ua {
			continue
		}
		res, body := env.Get(key, "/dashboard/api/sessions/"+s.ID)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("session %s: %d %s", s.ID, res.StatusCode, body)
		}
		var d struct {
			Data signedDetail `json:"data"`
		}
		if err := json.Unmarshal(body, &d); err != nil {
			t.Fatal(err)
		}
		return d.Data
	}
	t.Fatalf("no session of %q", ua)
	return signedDetail{}
}
