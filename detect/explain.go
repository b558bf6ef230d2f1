package detect

import "sort"

// Explanation is how Judge reached its verdict on some evidence, for people: what
// each signal added to the score, the rule that chose the class and the bounds that
// held the score. It reads the same tables Judge does (Weights, countsOnce,
// classBounds, actedBounds), so the dashboard never keeps a copy of them.
type Explanation struct {
	Verdict Verdict
	// Parts are the signals that count, largest contribution first.
	Parts []Part
	// Raw is the sum of the parts before the cap at 100 and the class's bounds.
	Raw int
	// Rule is the number (1–11) of Judge's rule that chose the class; RuleText says it in words.
	Rule     int
	RuleText string
	// Floor and Ceil bound the class's score.
	Floor, Ceil int
}

// Part is one signal's share of a score.
type Part struct {
	Name string
	// Count is how often it fired in the session (1 for a user-agent signal Judge inferred).
	Count int
	// Weight is its first occurrence's points; Points what all its occurrences added.
	Weight, Points int
	// CountsOnce marks identity signals, whose repeats add nothing.
	CountsOnce bool
	Tripwire   bool
	// FromUserAgent: Judge inferred it from the user agent; the engine did not record it.
	FromUserAgent bool
}

// ruleTexts are Judge's rules in words, by number (see Judge's documentation).
var ruleTexts = [...]string{
	1:  "A leaked system prompt (SYSTEM_PROMPT_LEAKED), or a planted credential used or a decoy tool called (CREDENTIAL_USED, TOOL_INVOKED) with AI evidence: AI agent (malicious).",
	2:  "A planted credential used or a decoy tool called (CREDENTIAL_USED, TOOL_INVOKED) with no AI evidence (no followed injection, leaked prompt, AI user agent or LLM-speed follow-up): a malicious scanner or bot, high.",
	3:  "The visitor followed a hidden instruction (INJECTION_FOLLOWED): AI agent.",
	4:  "A scanner user agent or systematic probing (SCANNER_UA, SYSTEMATIC_PROBING): scanner. A browser whose only evidence is probing stays below the detection threshold (people behind one address).",
	5:  "Its signature does not verify or was replayed (SIGNATURE_INVALID), or it claimed a crawler identity that neither its operator's reverse DNS, its published ranges nor a signature from its operator's origin back (UNVERIFIED_BOT_CLAIM): bot, whatever the user agent says.",
	6:  "A known AI user agent: AI agent, AI assistant or AI crawler by the agent's category (surer when its operator verified it: CRAWLER_VERIFIED, by reverse DNS, ranges or a signature from its origin).",
	7:  "A search-engine crawler's user agent: crawler (also when it follows hidden links; surer when its operator verified it: CRAWLER_VERIFIED, by reverse DNS, ranges or a signature from its origin).",
	8:  "A parser followed a link only hidden content held (CALLBACK_HIT): bot. A browser that followed one such link, not at machine speed, and did nothing else stays below the detection threshold (curiosity).",
	9:  "A link previewer's user agent (a chat or social app fetching a shared link): crawler, never an AI class.",
	10: "An automation, headless-browser or empty user agent, a browser claim the connection's stack contradicts, or a verified signed agent (SIGNED_AGENT_VERIFIED): bot.",
	11: "Nothing above applies: human.",
}

// RuleText is Judge's rule n in words, "" for an unknown number.
func RuleText(n int) string {
	if n < 1 || n >= len(ruleTexts) {
		return ""
	}
	return ruleTexts[n]
}

// Explain judges e as Judge does and says how. It does not change Judge's answer:
// Explain(e).Verdict == Judge(e).
func Explain(e Evidence) Explanation {
	v, rule, b := judge(e)
	var x Explanation
	x.Verdict, x.Rule, x.RuleText = v, rule, RuleText(rule)
	x.Floor, x.Ceil = b.floor, b.ceil
	for name, n := range e.Signals {
		if n <= 0 {
			continue
		}
		sig := signalsByName[name]
		p := Part{Name: name, Count: n, Weight: sig.Weight, Points: points(e, name, n), CountsOnce: sig.Once, Tripwire: sig.Tripwire}
		x.Parts = append(x.Parts, p)
		x.Raw += p.Points
	}
	if ua := UASignal(e.Agent); ua != "" && e.Signals[ua] <= 0 {
		sig := signalsByName[ua]
		p := Part{Name: ua, Count: 1, Weight: sig.Weight, Points: weigh(ua, 1), CountsOnce: sig.Once, FromUserAgent: true}
		x.Parts = append(x.Parts, p)
		x.Raw += p.Points
	}
	sort.Slice(x.Parts, func(i, j int) bool {
		if x.Parts[i].Points != x.Parts[j].Points {
			return x.Parts[i].Points > x.Parts[j].Points
		}
		return x.Parts[i].Name < x.Parts[j].Name
	})
	return x
}
