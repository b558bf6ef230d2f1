package detect

import "testing"

// Explain must say exactly what Judge did: the same verdict, parts that add up to the
// raw score the bounds then clamp, and the rule whose class the verdict has.
func TestExplainAgreesWithJudge(t *testing.T) {
	ruleClass := map[int][]string{
		1: {ClassAIAgentMalicious}, 2: {ClassAIAgent}, 3: {ClassScanner}, 4: {ClassBot},
		5: {ClassAIAgent, ClassAIAssistant, ClassAICrawler}, 6: {ClassCrawler}, 7: {ClassBot}, 8: {ClassBot}, 9: {ClassHuman},
	}
	cases := []struct {
		name string
		e    Evidence
		rule int
	}{
		{"person", ev(uaChrome, 3, nil), 9},
		{"person, robots ignored", ev(uaChrome, 3, sig{SignalRobotsDisallowIgnored: 2}), 9},
		{"googlebot", ev(uaGooglebot, 4, sig{SignalSearchCrawlerUA: 4}), 6},
		{"fake googlebot", ev(uaGooglebot, 3, sig{SignalUnverifiedBotClaim: 3}), 4},
		{"curl, UA signal not recorded", ev(uaCurl, 1, nil), 8},
		{"regex crawler", ev(uaRequests, 9, sig{SignalCallbackHit: 5, SignalMachineSpeedFollowup: 5}), 7},
		{"sqlmap", ev(uaSqlmap, 40, sig{SignalScannerUA: 40, SignalSystematicProbing: 1}), 3},
		{"GPTBot", ev(uaGPTBot, 2, sig{SignalKnownAICrawlerUA: 2}), 5},
		{"agent follows injection", ev(uaManus, 4, sig{SignalInjectionFollowed: 2, SignalLLMSpeedFollowup: 2}), 2},
		{"prompt leaked", ev(uaChrome, 5, sig{SignalSystemPromptLeaked: 1, SignalInjectionFollowed: 1, SignalCallbackHit: 3}), 1},
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
	if RuleText(0) != "" || RuleText(10) != "" {
		t.Error("RuleText of an unknown rule")
	}
}
