package detect

import "testing"

// Explain must say exactly what Judge did: the same verdict, parts that add up to the
// raw score the bounds then clamp, and the rule whose class the verdict has.
func TestExplainAgreesWithJudge(t *testing.T) {
	ruleClass := map[int][]string{
		1: {ClassAIAgentMalicious}, 2: {ClassBot, ClassScanner}, 3: {ClassAIAgent}, 4: {ClassScanner}, 5: {ClassBot},
		6: {ClassAIAgent, ClassAIAssistant, ClassAICrawler}, 7: {ClassCrawler}, 8: {ClassBot}, 9: {ClassCrawler}, 10: {ClassBot}, 11: {ClassHuman},
	}
	cases := []struct {
		name string
		e    Evidence
		rule int
	}{
		{"person", ev(uaChrome, 3, nil), 11},
		{"person, robots ignored", ev(uaChrome, 3, sig{SignalRobotsDisallowIgnored: 2}), 11},
		{"googlebot", ev(uaGooglebot, 4, sig{SignalSearchCrawlerUA: 4}), 7},
		{"fake googlebot", ev(uaGooglebot, 3, sig{SignalUnverifiedBotClaim: 3}), 5},
		{"curl, UA signal not recorded", ev(uaCurl, 1, nil), 10},
		{"regex crawler", ev(uaRequests, 9, sig{SignalCallbackHit: 5, SignalMachineSpeedFollowup: 5}), 8},
		{"sqlmap", ev(uaSqlmap, 40, sig{SignalScannerUA: 40, SignalSystematicProbing: 1}), 4},
		{"GPTBot", ev(uaGPTBot, 2, sig{SignalKnownAICrawlerUA: 2}), 6},
		{"agent follows injection", ev(uaManus, 4, sig{SignalInjectionFollowed: 2, SignalLLMSpeedFollowup: 2}), 3},
		{"prompt leaked", ev(uaChrome, 5, sig{SignalSystemPromptLeaked: 1, SignalInjectionFollowed: 1, SignalCallbackHit: 3}), 1},
		{"curl uses a planted key", ev(uaCurl, 2, sig{SignalCredentialUsed: 1}), 2},
		{"sqlmap calls a decoy tool", ev(uaSqlmap, 20, sig{SignalToolInvoked: 1, SignalSystematicProbing: 1}), 2},
		{"link previewer", ev(uaSlackPreview, 1, nil), 9},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := Explain(c.e)
			if v := Judge(c.e); x.Verdict != v {
				t.Fatalf("Explain verdict %+v, Judge %+v", x.Verdict, v)
			}
			if x.Rule != c.rule || x.RuleText == "" {
				t.Fatalf("rule %d (%q), want %d", x.Rule, x.RuleText, c.rule)
			}
			ok := false
			for _, cl := range ruleClass[x.Rule] {
				ok = ok || cl == x.Verdict.Classification
			}
			if !ok {
				t.Fatalf("rule %d chose %s", x.Rule, x.Verdict.Classification)
			}
			sum := 0
			for i, p := range x.Parts {
				sum += p.Points
				if p.Weight != Weights[p.Name] {
					t.Errorf("%s weight %d, table %d", p.Name, p.Weight, Weights[p.Name])
				}
				if i > 0 && p.Points > x.Parts[i-1].Points {
					t.Errorf("parts not largest first: %+v", x.Parts)
				}
			}
			if sum != x.Raw {
				t.Fatalf("parts add to %d, raw %d", sum, x.Raw)
			}
			if want := min(max(min(x.Raw, 100), x.Floor), x.Ceil); want != x.Verdict.Score {
				t.Fatalf("score %d, clamp(raw %d, %d..%d) = %d", x.Verdict.Score, x.Raw, x.Floor, x.Ceil, want)
			}
		})
	}
}

func TestExplainRepeatsAndInferredUserAgent(t *testing.T) {
	x := Explain(ev(uaCurl, 6, sig{SignalCallbackHit: 3}))
	got := map[string]Part{}
	for _, p := range x.Parts {
		got[p.Name] = p
	}
	if p := got[SignalCallbackHit]; p.Count != 3 || p.Points != 30+15+7 || p.CountsOnce {
		t.Errorf("CALLBACK_HIT ×3: %+v", p)
	}
	if p := got[SignalAutomationClientUA]; !p.FromUserAgent || p.Points != Weights[SignalAutomationClientUA] || !p.CountsOnce {
		t.Errorf("inferred AUTOMATION_CLIENT_UA: %+v", p)
	}
	if RuleText(0) != "" || RuleText(12) != "" {
		t.Error("RuleText of an unknown rule")
	}
}
