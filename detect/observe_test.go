package detect_test

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent/schematype"
)

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

const chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36"

func newSession(ua string) detect.Session {
	return detect.Session{UA: ua, Last: t0, State: schematype.SessionState{Signals: map[string]int{}}}
}

func request(path string, at time.Duration, tokens ...detect.TokenUse) detect.Observation {
	return detect.Observation{At: t0.Add(at), Method: "GET", Host: "shop.example", Path: path, UA: chrome,
		IP: netip.MustParseAddr("198.51.100.7"), Kind: "callback", Tokens: tokens}
}

func token(use detect.Use) detect.TokenUse {
	return detect.TokenUse{Use: use, SourceHit: "hit_1", SourceAt: t0, Placement: "x#0"}
}

func names(fs []detect.Firing) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

// Each rule of the engine, without a database: one request against a session.
func TestObserveRules(t *testing.T) {
	prompt := "You are ChatGPT, a large language model trained by OpenAI, based on the GPT-4o architecture.\nKnowledge cutoff: 2023-10\nCurrent date: 2025-03-14\n\nImage input capabilities: Enabled\nPersonality: v2"
	answered := token(detect.UseChallenge)
	answered.Answered, answered.Answer = true, "4417"
	sink := request("/s", 3*time.Minute, token(detect.UseSink))
	sink.Method, sink.Body = "POST", `{"system": `+fmt.Sprintf("%q", prompt)+`}`
	sinkTest := request("/s", 20*time.Second, token(detect.UseSink))
	sinkTest.Method, sinkTest.Body = "POST", "test"
	for _, tt := range []struct {
		name string
		obs  detect.Observation
		want []string
	}{
		{"hidden link followed", request("/c", 3*time.Minute, token(detect.UseCallback)), []string{detect.SignalCallbackHit, detect.SignalHumanSpeedFollowup}},
		{"challenge not answered", request("/c", 3*time.Minute, token(detect.UseChallenge)), []string{detect.SignalCallbackHit, detect.SignalHumanSpeedFollowup}},
		{"challenge answered", request("/c", 3*time.Minute, answered), []string{detect.SignalInjectionFollowed, detect.SignalHumanSpeedFollowup}},
		{"canary echoed", request("/c", 3*time.Minute, token(detect.UseCanary)), []string{detect.SignalInjectionFollowed, detect.SignalHumanSpeedFollowup}},
		// Using a credential or calling a tool is not following a hidden link: its delay is
		// kept as evidence but fires no follow-up timing signal (which is AI evidence at LLM speed).
		{"credential used", request("/c", 3*time.Minute, token(detect.UseCredential)), []string{detect.SignalCredentialUsed}},
		{"credential used at LLM speed", request("/c", 20*time.Second, token(detect.UseCredential)), []string{detect.SignalCredentialUsed}},
		{"decoy tool token at LLM speed", request("/mcp", 20*time.Second, token(detect.UseTool)), []string{detect.SignalCallbackHit}},
		{"a sink post that is not a prompt is a callback", sinkTest, []string{detect.SignalCallbackHit, detect.SignalLLMSpeedFollowup}},
		{"prompt posted to the sink", sink, []string{detect.SignalInjectionFollowed, detect.SignalHumanSpeedFollowup, detect.SignalSystemPromptLeaked}},
		{"nothing of ours", request("/about", time.Second), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := newSession(chrome)
			next, out := detect.Observe(before, tt.obs)
			if got := names(out.Firings); !slices.Equal(got, tt.want) {
				t.Fatalf("fired %v, want %v", got, tt.want)
			}
			if len(before.State.Signals) != 0 || before.Hits != 0 {
				t.Fatalf("Observe changed its input: %+v", before)
			}
			if next.Hits != 1 || !next.Last.Equal(tt.obs.At) {
				t.Fatalf("hits %d, last %v", next.Hits, next.Last)
			}
			trips := 0
			for _, n := range tt.want {
				if detect.IsTripwire(n) {
					trips++
				}
			}
			if out.Tripwires != trips {
				t.Fatalf("tripwires %d, want %d", out.Tripwires, trips)
			}
		})
	}
	t.Run("the leaked prompt names the model and operator", func(t *testing.T) {
		next, out := detect.Observe(newSession(chrome), sink)
		if len(out.Prompts) != 1 || next.Model != "gpt-4o" || next.Operator != "OpenAI" {
			t.Fatalf("prompts %d, model %q, operator %q", len(out.Prompts), next.Model, next.Operator)
		}
		if out.Verdict.Classification != "AI_AGENT_MALICIOUS" {
			t.Fatalf("verdict %+v", out.Verdict)
		}
	})
}

// A tool call or a credential use without AI evidence is a malicious bot, not an AI class;
// with AI evidence (a followed injection, a hidden link at LLM speed) it is an AI agent.
func TestObserveActingNeedsAIEvidence(t *testing.T) {
	tool := func(ua string, at time.Duration) detect.Observation {
		o := request("/mcp", at, token(detect.UseTool))
		o.Method, o.UA, o.Tool, o.ToolArgs = "POST", ua, "lookup_customer", `{"query":"x"}`
		return o
	}
	cred := func(ua string, at time.Duration) detect.Observation {
		o := request("/v1/customers", at, token(detect.UseCredential))
		o.UA = ua
		return o
	}
	sinkTest := func(ua string, at time.Duration) detect.Observation {
		o := request("/s", at, token(detect.UseSink))
		o.Method, o.Body, o.UA = "POST", "test", ua
		return o
	}
	for _, tt := range []struct {
		name, ua string
		obs      []detect.Observation
		class    string
		severity string
	}{
		{"curl calls a decoy tool at LLM speed", "curl/8.5.0", []detect.Observation{tool("curl/8.5.0", 20*time.Second)}, detect.ClassBot, detect.SeverityHigh},
		{"a person's curl uses a planted key a minute later", "curl/8.5.0", []detect.Observation{cred("curl/8.5.0", time.Minute)}, detect.ClassBot, detect.SeverityHigh},
		{"curl posts test to a sink", "curl/8.5.0", []detect.Observation{sinkTest("curl/8.5.0", 30*time.Second)}, detect.ClassBot, detect.SeverityMedium},
		{"browser posts test to a sink", chrome, []detect.Observation{sinkTest(chrome, 30*time.Second)}, detect.ClassBot, detect.SeverityMedium},
		{"a hidden link at LLM speed, then a tool call", chrome, []detect.Observation{request("/c", 12*time.Second, token(detect.UseCallback)), tool(chrome, 30*time.Second)}, detect.ClassAIAgentMalicious, detect.SeverityCritical},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(tt.ua)
			var out detect.Outcome
			for _, o := range tt.obs {
				s, out = detect.Observe(s, o)
			}
			v := out.Verdict
			if v.Classification != tt.class || v.Severity != tt.severity || !detect.Detected(v) {
				t.Fatalf("%+v (signals %v), want %s %s", v, s.Fired, tt.class, tt.severity)
			}
			if s.State.Signals[detect.SignalInjectionFollowed] > 0 && tt.class != detect.ClassAIAgentMalicious {
				t.Fatalf("INJECTION_FOLLOWED fired: %v", s.Fired)
			}
		})
	}
}

// Behaviour across requests: robots.txt, probing, once-only signals.
func TestObserveAcrossRequests(t *testing.T) {
	t.Run("a disallowed path after robots.txt fires once", func(t *testing.T) {
		s := newSession(chrome)
		robots := request("/robots.txt", 0)
		robots.Kind, robots.TrapType, robots.Disallow = "decoy", "robots", []string{"/internal/"}
		s, _ = detect.Observe(s, robots)
		var fired []string
		for i := range 3 {
			var out detect.Outcome
			s, out = detect.Observe(s, request(fmt.Sprintf("/internal/%d", i), time.Duration(i+1)*time.Minute))
			fired = append(fired, names(out.Firings)...)
		}
		if !slices.Equal(fired, []string{detect.SignalRobotsDisallowIgnored}) {
			t.Fatalf("fired %v", fired)
		}
	})
	t.Run("unknown paths become probing, links of our own pages do not", func(t *testing.T) {
		s := newSession(chrome)
		var fired []string
		for i := range detect.ProbingThreshold + 2 {
			o := request(fmt.Sprintf("/wp-admin/%d.php", i), time.Duration(i)*time.Second)
			o.Kind = "not_found"
			var out detect.Outcome
			s, out = detect.Observe(s, o)
			fired = append(fired, names(out.Firings)...)
		}
		if !slices.Equal(fired, []string{detect.SignalSystematicProbing}) {
			t.Fatalf("fired %v", fired)
		}
		p := newSession(chrome)
		for i := range detect.ProbingThreshold + 2 {
			o := request(fmt.Sprintf("/docs/%d", i), time.Duration(i)*time.Second)
			o.Kind, o.Headers = "not_found", map[string][]string{"Referer": {"https://shop.example/docs/"}}
			var out detect.Outcome
			p, out = detect.Observe(p, o)
			if len(out.Firings) > 0 {
				t.Fatalf("a person following our links fired %v", names(out.Firings))
			}
		}
	})
	t.Run("a known AI agent's user agent fires once", func(t *testing.T) {
		s := newSession("Mozilla/5.0 (compatible; ChatGPT-User/1.0; +https://openai.com/bot)")
		var fired []string
		for i := range 3 {
			o := request("/x", time.Duration(i)*time.Second)
			o.UA = s.UA
			var out detect.Outcome
			s, out = detect.Observe(s, o)
			fired = append(fired, names(out.Firings)...)
		}
		if len(fired) != 1 || s.State.Signals[fired[0]] != 1 {
			t.Fatalf("fired %v", fired)
		}
	})
}

// Observe copies nothing it does not change, yet two requests observed from one state
// never write into each other's lists.
func TestObserveSharesNoListItChanges(t *testing.T) {
	base := newSession(chrome)
	base.State.Linked = make([]string, 1, 8) // spare capacity an append could write into
	base.State.Linked[0] = "/a"
	o1, o2 := request("/p1", time.Minute), request("/p2", time.Minute)
	o1.Kind, o1.Linked = "decoy", []string{"/x"}
	o2.Kind, o2.Linked = "decoy", []string{"/y"}
	s1, _ := detect.Observe(base, o1)
	s2, _ := detect.Observe(base, o2)
	if !slices.Equal(s1.State.Linked, []string{"/a", "/x"}) || !slices.Equal(s2.State.Linked, []string{"/a", "/y"}) || len(base.State.Linked) != 1 {
		t.Fatalf("linked: %v %v, base %v", s1.State.Linked, s2.State.Linked, base.State.Linked)
	}
}
