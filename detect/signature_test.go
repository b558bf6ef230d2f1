package detect

import (
	"net/netip"
	"slices"
	"testing"
	"time"
)

// A request's signature fact fires its signal; a claim signed by its operator's origin is
// backed, one signed by anyone else is not; an invalid or replayed signature makes a BOT
// whatever the user agent says.
func TestSignatureFacts(t *testing.T) {
	outside := netip.MustParseAddr("203.0.113.7") // in no crawler's published ranges
	valid := Signature{State: SignatureValid, Agent: "https://agent.example", KeyID: "kid1"}
	cases := []struct {
		name      string
		ua        string
		sig       Signature
		fired     []string
		notFired  []string
		class     string
		detail    string
		detection bool
	}{
		{"GPTBot signed by chatgpt.com outside its ranges", uaGPTBot, Signature{State: SignatureValid, Agent: "https://chatgpt.com", KeyID: "kid1"},
			[]string{SignalSignedAgentVerified, SignalCrawlerVerified}, []string{SignalUnverifiedBotClaim}, ClassAICrawler, "verified: https://chatgpt.com (key kid1)", false},
		// Anyone can publish a key directory: a signature proves its signer, not the claim.
		{"GPTBot signed by another origin outside its ranges", uaGPTBot, valid, []string{SignalSignedAgentVerified, SignalUnverifiedBotClaim},
			[]string{SignalCrawlerVerified}, ClassBot, "verified: https://agent.example (key kid1)", true},
		{"verified browser-shaped agent", uaChrome, valid, []string{SignalSignedAgentVerified}, nil, ClassBot, "verified: https://agent.example (key kid1)", false},
		{"unsigned GPTBot outside its ranges", uaGPTBot, Signature{}, []string{SignalUnverifiedBotClaim}, []string{SignalSignedAgentVerified}, ClassBot, "", true},
		{"invalid signature from a browser", uaChrome, Signature{State: SignatureInvalid, Agent: "https://agent.example", KeyID: "kid1", Reason: "the signature does not verify with key kid1"},
			[]string{SignalSignatureInvalid}, []string{SignalSignedAgentVerified}, ClassBot,
			"invalid signature from https://agent.example (key kid1): the signature does not verify with key kid1", true},
		{"replayed GPTBot", uaGPTBot, Signature{State: SignatureReplayed, Agent: "https://agent.example", KeyID: "kid1", Reason: "nonce already seen"},
			[]string{SignalSignatureInvalid}, []string{SignalSignedAgentVerified}, ClassBot, "replayed signature from https://agent.example (key kid1): nonce already seen", true},
		{"unverifiable", uaChrome, Signature{State: SignatureUnverifiable, Agent: "https://agent.example", KeyID: "kid1", Reason: "key directory timed out"},
			[]string{SignalSignatureUnverifiable}, []string{SignalSignatureInvalid, SignalSignedAgentVerified}, ClassHuman,
			"unverifiable signature from https://agent.example (key kid1): key directory timed out", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := Observation{At: time.Unix(1_800_000_000, 0), Method: "GET", Path: "/docs", UA: c.ua, IP: outside, Kind: "decoy", Signature: c.sig}
			_, out := Observe(Session{UA: c.ua}, o)
			var names []string
			details := map[string]string{}
			for _, f := range out.Firings {
				names = append(names, f.Name)
				details[f.Name] = f.Detail
			}
			for _, n := range c.fired {
				if !slices.Contains(names, n) {
					t.Errorf("%s did not fire (fired %v)", n, names)
				}
			}
			for _, n := range c.notFired {
				if slices.Contains(names, n) {
					t.Errorf("%s fired (fired %v)", n, names)
				}
			}
			if c.detail != "" && details[c.fired[0]] != c.detail {
				t.Errorf("detail %q, want %q", details[c.fired[0]], c.detail)
			}
			if out.Verdict.Classification != c.class || Detected(out.Verdict) != c.detection {
				t.Errorf("verdict %+v, want %s (detected %v)", out.Verdict, c.class, c.detection)
			}
		})
	}
	// A session whose claim its operator backed is not judged by an earlier unverified claim;
	// one whose signer is anyone else is.
	v := Judge(Evidence{Signals: map[string]int{SignalUnverifiedBotClaim: 1, SignalSignedAgentVerified: 1, SignalCrawlerVerified: 1}, Agent: LookupUA(uaGPTBot), Hits: 2})
	if v.Classification != ClassAICrawler {
		t.Errorf("verified after a claim: %+v", v)
	}
	if x := Explain(Evidence{Signals: map[string]int{SignalUnverifiedBotClaim: 1, SignalCrawlerVerified: 1}, Agent: LookupUA(uaGPTBot), Hits: 2}); x.Rule != 6 {
		t.Errorf("explained by rule %d", x.Rule)
	}
	if v := Judge(Evidence{Signals: map[string]int{SignalUnverifiedBotClaim: 1, SignalSignedAgentVerified: 1}, Agent: LookupUA(uaGPTBot), Hits: 2}); v.Classification != ClassBot {
		t.Errorf("a claim signed by another origin: %+v", v)
	}
	for origin, want := range map[string]bool{"https://chatgpt.com": true, "https://agents.openai.com": true, "https://chatgpt.com.evil.example": false,
		"http://chatgpt.com": false, "https://agent.example": false, "not a url": false} {
		if got := SignatureVouches(LookupUA(uaGPTBot), origin); got != want {
			t.Errorf("SignatureVouches(GPTBot, %q) = %v", origin, got)
		}
	}
}
