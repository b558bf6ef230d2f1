package detect

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

const (
	uaChrome       = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"
	uaSafariIOS    = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
	uaGPTBot       = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
	uaSearchBot    = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot"
	uaClaudeBot    = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)"
	uaChatGPT      = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot"
	uaManus        = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36 Manus-User/1.0"
	uaGooglebot    = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	uaCurl         = "curl/8.5.0"
	uaRequests     = "python-requests/2.31.0"
	uaHeadless     = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/124.0.6367.60 Safari/537.36"
	uaSqlmap       = "sqlmap/1.8.2#stable (https://sqlmap.org)"
	uaFacebook     = "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"
	uaSlackPreview = "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"
	uaOwnTool      = "acme-sync/2.4 (internal)"
)

type sig = map[string]int

func ev(ua string, hits int, s sig) Evidence {
	return Evidence{Agent: LookupUA(ua), Hits: hits, Signals: s}
}

func TestJudgeClasses(t *testing.T) {
	cases := []struct {
		name      string
		e         Evidence
		class     string
		severity  string
		detected  bool
		minConf   int
		scoreLess int // score must be below this (0 = don't check)
	}{
		// People.
		{"person opens a trap page", ev(uaChrome, 1, nil), ClassHuman, SeverityLow, false, 50, 1},
		{"person browses many pages", ev(uaSafariIOS, 40, nil), ClassHuman, SeverityLow, false, 85, 1},
		{"person reads robots.txt and visits a disallowed path", ev(uaChrome, 3, sig{SignalRobotsDisallowIgnored: 2}), ClassHuman, SeverityLow, false, 30, 26},
		{"person with every soft signal", ev(uaChrome, 500, sig{SignalRobotsDisallowIgnored: 50, SignalHumanSpeedFollowup: 9}), ClassHuman, SeverityLow, false, 30, 26},

		// Search engines.
		{"verified Googlebot", ev(uaGooglebot, 12, sig{SignalSearchCrawlerUA: 12}), ClassCrawler, SeverityLow, false, 90, 1},
		{"Googlebot following hidden links", ev(uaGooglebot, 30, sig{SignalSearchCrawlerUA: 30, SignalCallbackHit: 9}), ClassCrawler, SeverityLow, false, 90, 36},
		{"fake Googlebot", ev(uaGooglebot, 3, sig{SignalUnverifiedBotClaim: 3}), ClassBot, SeverityMedium, true, 80, 0},

		// Scripts and regex crawlers.
		{"curl once", ev(uaCurl, 1, nil), ClassBot, SeverityLow, false, 70, 40},
		{"headless browser", ev(uaHeadless, 2, nil), ClassBot, SeverityLow, false, 70, 40},
		{"empty user agent", ev("", 1, sig{SignalEmptyUA: 1}), ClassBot, SeverityLow, false, 60, 40},
		{"regex crawler follows every hidden link", ev(uaRequests, 20, sig{SignalCallbackHit: 8, SignalMachineSpeedFollowup: 8, SignalRobotsDisallowIgnored: 4}), ClassBot, SeverityMedium, true, 85, 70},
		{"browser UA, hidden link followed at machine speed", ev(uaChrome, 5, sig{SignalCallbackHit: 3, SignalMachineSpeedFollowup: 3}), ClassBot, SeverityMedium, true, 85, 0},
		{"browser UA, one hidden link followed slowly (source reader?)", ev(uaChrome, 2, sig{SignalCallbackHit: 1, SignalHumanSpeedFollowup: 1}), ClassBot, SeverityLow, false, 55, 40},

		// Link previewers: their own kind, never AI, never an event.
		{"facebookexternalhit unfurls a shared link", ev(uaFacebook, 2, nil), ClassCrawler, SeverityLow, false, 60, 1},
		{"Slack unfurls a shared link", ev(uaSlackPreview, 1, nil), ClassCrawler, SeverityLow, false, 60, 1},
		{"a link previewer ignoring robots.txt", ev(uaFacebook, 3, sig{SignalRobotsDisallowIgnored: 2}), ClassCrawler, SeverityLow, false, 60, 36},
		{"a link previewer following a hidden link", ev(uaFacebook, 3, sig{SignalCallbackHit: 1}), ClassBot, SeverityLow, false, 85, 40},

		// A client on no list that is not browser-shaped is automation, not a person.
		{"unrecognised non-browser user agent", ev(uaOwnTool, 1, nil), ClassBot, SeverityLow, false, 70, 40},

		// Scanners.
		{"sqlmap", ev(uaSqlmap, 50, nil), ClassScanner, SeverityMedium, true, 70, 0},
		// Only probing from a browser: maybe people behind one NAT, so no event.
		{"browser UA probing a wordlist", ev(uaChrome, 60, sig{SignalSystematicProbing: 1}), ClassScanner, SeverityLow, false, 60, 40},
		{"browser UA probing, robots.txt ignored", ev(uaChrome, 60, sig{SignalSystematicProbing: 1, SignalRobotsDisallowIgnored: 3}), ClassScanner, SeverityLow, false, 60, 40},
		{"browser UA probing and following hidden links", ev(uaChrome, 60, sig{SignalSystematicProbing: 1, SignalCallbackHit: 1}), ClassScanner, SeverityHigh, true, 75, 0},
		{"curl probing a wordlist", ev(uaCurl, 60, sig{SignalSystematicProbing: 1}), ClassScanner, SeverityMedium, true, 75, 0},
		{"scanner UA and probing", ev(uaSqlmap, 60, sig{SignalSystematicProbing: 1, SignalRobotsDisallowIgnored: 5}), ClassScanner, SeverityHigh, true, 90, 90},

		// AI by user agent.
		{"GPTBot crawling", ev(uaGPTBot, 4, nil), ClassAICrawler, SeverityLow, false, 80, 40},
		{"OAI-SearchBot (ai_search) is an AI crawler", ev(uaSearchBot, 1, nil), ClassAICrawler, SeverityLow, false, 60, 40},
		{"ClaudeBot ignoring robots.txt", ev(uaClaudeBot, 9, sig{SignalRobotsDisallowIgnored: 3}), ClassAICrawler, SeverityMedium, true, 60, 70},
		{"AI crawler following hidden links", ev(uaGPTBot, 9, sig{SignalCallbackHit: 2}), ClassAICrawler, SeverityMedium, true, 90, 70},
		{"fake GPTBot", ev(uaGPTBot, 2, sig{SignalUnverifiedBotClaim: 1}), ClassBot, SeverityMedium, true, 80, 70},
		{"ChatGPT-User fetch", ev(uaChatGPT, 1, nil), ClassAIAssistant, SeverityLow, false, 60, 40},
		{"ChatGPT-User follows a hidden link", ev(uaChatGPT, 2, sig{SignalCallbackHit: 1, SignalLLMSpeedFollowup: 1}), ClassAIAssistant, SeverityMedium, true, 75, 70},
		{"AI agent by user agent", ev(uaManus, 1, nil), ClassAIAgent, SeverityMedium, true, 60, 70},

		// Tripwires.
		{"injection followed by a browser-looking agent", ev(uaChrome, 3, sig{SignalCallbackHit: 1, SignalInjectionFollowed: 1, SignalLLMSpeedFollowup: 1}), ClassAIAgent, SeverityHigh, true, 90, 90},
		{"injection followed by a known agent", ev(uaManus, 3, sig{SignalInjectionFollowed: 2}), ClassAIAgent, SeverityHigh, true, 95, 90},
		{"injection followed by an AI crawler UA", ev(uaGPTBot, 3, sig{SignalInjectionFollowed: 1}), ClassAIAgent, SeverityHigh, true, 90, 90},
		{"injection followed by a scanner", ev(uaSqlmap, 3, sig{SignalInjectionFollowed: 1}), ClassAIAgent, SeverityHigh, true, 90, 90},
		{"system prompt leaked", ev(uaChrome, 4, sig{SignalSystemPromptLeaked: 1}), ClassAIAgentMalicious, SeverityCritical, true, 95, 0},
		{"credential used by an AI crawler's user agent", ev(uaGPTBot, 1, sig{SignalCredentialUsed: 1}), ClassAIAgentMalicious, SeverityCritical, true, 97, 0},
		{"tool invoked by a known agent", ev(uaManus, 2, sig{SignalToolInvoked: 1}), ClassAIAgentMalicious, SeverityCritical, true, 90, 0},
		{"hidden link at LLM speed, then a credential", ev(uaChrome, 3, sig{SignalCallbackHit: 1, SignalLLMSpeedFollowup: 1, SignalCredentialUsed: 1}), ClassAIAgentMalicious, SeverityCritical, true, 97, 0},
		{"injection followed, then a tool call", ev(uaRequests, 3, sig{SignalInjectionFollowed: 1, SignalToolInvoked: 1}), ClassAIAgentMalicious, SeverityCritical, true, 92, 0},

		// Acting without AI evidence: a person or a script with curl is malicious, not AI.
		{"curl uses a planted credential", ev(uaCurl, 1, sig{SignalCredentialUsed: 1}), ClassBot, SeverityHigh, true, 90, 90},
		{"curl calls a decoy tool", ev(uaCurl, 3, sig{SignalToolInvoked: 1, SignalCallbackHit: 1}), ClassBot, SeverityHigh, true, 85, 90},
		{"browser user agent calls a decoy tool", ev(uaChrome, 2, sig{SignalToolInvoked: 1}), ClassBot, SeverityHigh, true, 85, 90},
		{"script repeats a planted key many times", ev(uaRequests, 40, sig{SignalCredentialUsed: 30, SignalToolInvoked: 5, SignalMachineSpeedFollowup: 9}), ClassBot, SeverityHigh, true, 90, 90},
		{"sqlmap tries a planted key", ev(uaSqlmap, 30, sig{SignalCredentialUsed: 1, SignalSystematicProbing: 1}), ClassScanner, SeverityHigh, true, 90, 90},
		{"browser user agent probing, then a tool call", ev(uaChrome, 30, sig{SignalSystematicProbing: 1, SignalToolInvoked: 1}), ClassScanner, SeverityHigh, true, 85, 90},
		{"hidden link followed slowly, then a credential", ev(uaCurl, 3, sig{SignalCallbackHit: 1, SignalHumanSpeedFollowup: 1, SignalCredentialUsed: 1}), ClassBot, SeverityHigh, true, 90, 90},
		{"full agent run", ev(uaChrome, 7, sig{SignalCallbackHit: 3, SignalInjectionFollowed: 2, SignalSystemPromptLeaked: 1, SignalLLMSpeedFollowup: 3}), ClassAIAgentMalicious, SeverityCritical, true, 97, 0},
		{"scanner that leaks a prompt", ev(uaSqlmap, 40, sig{SignalSystematicProbing: 1, SignalSystemPromptLeaked: 1}), ClassAIAgentMalicious, SeverityCritical, true, 95, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Judge(c.e)
			if v.Classification != c.class {
				t.Errorf("class = %s, want %s (%+v)", v.Classification, c.class, v)
			}
			if v.Severity != c.severity {
				t.Errorf("severity = %s, want %s (%+v)", v.Severity, c.severity, v)
			}
			if Detected(v) != c.detected {
				t.Errorf("Detected = %v, want %v (%+v)", Detected(v), c.detected, v)
			}
			if v.Confidence < c.minConf || v.Confidence > 99 {
				t.Errorf("confidence = %d, want %d–99", v.Confidence, c.minConf)
			}
			if c.scoreLess > 0 && v.Score >= c.scoreLess {
				t.Errorf("score = %d, want < %d", v.Score, c.scoreLess)
			}
			if v.Score < 0 || v.Score > 100 {
				t.Errorf("score %d out of range", v.Score)
			}
			if want := severityFor(v.Score); v.Classification != ClassAIAgentMalicious && v.Severity != want {
				t.Errorf("severity %s does not follow score %d", v.Severity, v.Score)
			}
		})
	}
}

// A browser with no tripwire stays a person with a low score, however many
// hits and whatever soft signals pile up.
func TestHumanStaysHuman(t *testing.T) {
	soft := []string{SignalRobotsDisallowIgnored, SignalHumanSpeedFollowup, SignalSearchCrawlerUA}
	for _, ua := range []string{uaChrome, uaSafariIOS} {
		for hits := 0; hits <= 10000; hits = hits*3 + 1 {
			s := sig{}
			for _, name := range soft[:2] {
				s[name] = hits
			}
			v := Judge(Evidence{Agent: LookupUA(ua), Hits: hits, Signals: s})
			if v.Classification != ClassHuman || v.Score > 25 || v.Severity != SeverityLow || Detected(v) {
				t.Fatalf("%d hits: %+v", hits, v)
			}
		}
	}
}

func TestJudgeCountsTheAgentEvenWithoutItsSignal(t *testing.T) {
	with := Judge(ev(uaManus, 1, sig{SignalKnownAIAgentUA: 1}))
	without := Judge(ev(uaManus, 1, nil))
	if with != without {
		t.Errorf("with signal %+v, without %+v", with, without)
	}
	// The engine may aggregate: a UA signal in the map counts once however often it fired.
	many := Judge(ev(uaManus, 100, sig{SignalKnownAIAgentUA: 100}))
	if many.Score != with.Score {
		t.Errorf("identity signal counted more than once: %d vs %d", many.Score, with.Score)
	}
	// A UA-kind signal in the map classifies even when the agent is unknown.
	v := Judge(Evidence{Signals: sig{SignalKnownAIAssistantUA: 1}})
	if v.Classification != ClassAIAssistant {
		t.Errorf("signal-only assistant: %+v", v)
	}
}

func TestJudgeIgnoresUnknownAndNonPositiveCounts(t *testing.T) {
	v := Judge(ev(uaChrome, 1, sig{"MADE_UP": 9, SignalSystemPromptLeaked: 0, SignalCredentialUsed: -3}))
	if v.Classification != ClassHuman || v.Score != 0 {
		t.Errorf("%+v", v)
	}
}

func TestRepeatsDiminish(t *testing.T) {
	if got := weigh(SignalCallbackHit, 1); got != 30 {
		t.Errorf("1 callback = %d", got)
	}
	if got := weigh(SignalCallbackHit, 2); got != 45 {
		t.Errorf("2 callbacks = %d", got)
	}
	if got := weigh(SignalCallbackHit, 1000); got >= 60 {
		t.Errorf("1000 callbacks = %d, want < 2×30", got)
	}
	if got := weigh(SignalScannerUA, 1000); got != Weights[SignalScannerUA] {
		t.Errorf("identity signal counted %d", got)
	}
}

// Adding a tripwire never lowers the score or the severity, from any
// starting evidence: every subset of supporting signals, every user-agent
// kind, every subset of tripwires already fired.
func TestMonotonicInTripwires(t *testing.T) {
	uas := []string{"", uaChrome, uaGPTBot, uaSearchBot, uaChatGPT, uaManus, uaGooglebot, uaCurl, uaHeadless, uaSqlmap, uaFacebook, uaOwnTool}
	supporting := []string{SignalRobotsDisallowIgnored, SignalMachineSpeedFollowup, SignalLLMSpeedFollowup,
		SignalHumanSpeedFollowup, SignalSystematicProbing, SignalUnverifiedBotClaim}
	tripwires := []string{SignalCallbackHit, SignalInjectionFollowed, SignalSystemPromptLeaked, SignalCredentialUsed, SignalToolInvoked}
	checked := 0
	for _, ua := range uas {
		agent := LookupUA(ua)
		for sm := 0; sm < 1<<len(supporting); sm++ {
			for tm := 0; tm < 1<<len(tripwires); tm++ {
				base := sig{}
				for i, s := range supporting {
					if sm&(1<<i) != 0 {
						base[s] = 1 + i%3
					}
				}
				for i, s := range tripwires {
					if tm&(1<<i) != 0 {
						base[s] = 1
					}
				}
				before := Judge(Evidence{Agent: agent, Hits: 5, Signals: base})
				for _, add := range tripwires {
					after := maps.Clone(base)
					after[add]++
					v := Judge(Evidence{Agent: agent, Hits: 6, Signals: after})
					checked++
					if v.Score < before.Score || SeverityRank(v.Severity) < SeverityRank(before.Severity) {
						t.Fatalf("%q %v + %s: %+v -> %+v", ua, keys(base), add, before, v)
					}
				}
			}
		}
	}
	t.Logf("%d transitions checked", checked)
}

func keys(m sig) []string { return slices.Sorted(maps.Keys(m)) }

func TestDetected(t *testing.T) {
	cases := []struct {
		v    Verdict
		want bool
	}{
		{Verdict{Classification: ClassAIAgent, Score: 40}, true},
		{Verdict{Classification: ClassAIAgent, Score: 39}, false},
		{Verdict{Classification: ClassBot, Score: 69}, true},
		{Verdict{Classification: ClassHuman, Score: 100}, false},
		{Verdict{Classification: ClassCrawler, Score: 100}, false},
		{Verdict{Classification: ClassAIAgentMalicious, Score: 95}, true},
	}
	for _, c := range cases {
		if got := Detected(c.v); got != c.want {
			t.Errorf("Detected(%+v) = %v", c.v, got)
		}
	}
}

func TestSeverity(t *testing.T) {
	for score, want := range map[int]string{0: "low", 39: "low", 40: "medium", 69: "medium", 70: "high", 89: "high", 90: "critical", 100: "critical"} {
		if got := severityFor(score); got != want {
			t.Errorf("severityFor(%d) = %s, want %s", score, got, want)
		}
	}
	order := []string{SeverityLow, SeverityMedium, SeverityHigh, SeverityCritical}
	for i, s := range order {
		if SeverityRank(s) != i {
			t.Errorf("SeverityRank(%s) = %d", s, SeverityRank(s))
		}
	}
	if SeverityRank("bogus") != -1 {
		t.Error("unknown severity must rank -1")
	}
}

func TestJudgeDoesNotAllocate(t *testing.T) {
	e := ev(uaChrome, 3, sig{SignalCallbackHit: 2, SignalInjectionFollowed: 1, SignalLLMSpeedFollowup: 2})
	if n := testing.AllocsPerRun(100, func() { Judge(e) }); n != 0 {
		t.Errorf("Judge allocates %.0f times", n)
	}
}

func ExampleJudge() {
	agent := LookupUA("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36")
	v := Judge(Evidence{
		Agent: agent,
		Hits:  4,
		Signals: map[string]int{
			SignalCallbackHit:        2,
			SignalInjectionFollowed:  1,
			SignalSystemPromptLeaked: 1,
			SignalLLMSpeedFollowup:   2,
		},
	})
	fmt.Println(v.Classification, v.Score, v.Severity, Detected(v))
	// Output: AI_AGENT_MALICIOUS 100 critical true
}

// The package is used from many request goroutines at once.
func TestConcurrentUse(t *testing.T) {
	done := make(chan struct{})
	for g := 0; g < 8; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 200; i++ {
				c := uaCases[(g*31+i)%len(uaCases)]
				a := LookupUA(c.ua)
				s := map[string]int{SignalCallbackHit: i % 3}
				if u := UASignal(a); u != "" {
					s[u] = 1
				}
				Judge(Evidence{Signals: s, Agent: a, Hits: i})
				if i%50 == 0 {
					AnalyzePrompt(promptCases[g%len(promptCases)].text)
				}
			}
		}()
	}
	for g := 0; g < 8; g++ {
		<-done
	}
}
