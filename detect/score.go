package detect

// Classifications, upper case as stored on a session; events carry them in
// lower case.
const (
	ClassHuman            = "HUMAN"
	ClassBot              = "BOT"
	ClassCrawler          = "CRAWLER"
	ClassAICrawler        = "AI_CRAWLER"
	ClassAIAssistant      = "AI_ASSISTANT"
	ClassAIAgent          = "AI_AGENT"
	ClassAIAgentMalicious = "AI_AGENT_MALICIOUS"
	ClassScanner          = "SCANNER"
)

// ClassInfo is one classification, in one row.
type ClassInfo struct {
	Name string
	// Agent says the overview counts the class among detected AI agents (agentsDetected).
	Agent bool
}

// classTable is the one list of classifications, in the stored enum's order: the ent
// schema, the GraphQL and OpenAPI enums and the analytics grouping are made from it.
var classTable = []ClassInfo{
	{ClassHuman, false}, {ClassBot, false}, {ClassCrawler, false}, {ClassAICrawler, false},
	{ClassAIAssistant, true}, {ClassAIAgent, true}, {ClassAIAgentMalicious, true}, {ClassScanner, false},
}

// Classes returns every classification, in the stored enum's order.
func Classes() []ClassInfo { return append([]ClassInfo(nil), classTable...) }

// Severities, lowest to highest.
const (
	SeverityLow      = "low"
	SeverityMedium   = "medium"
	SeverityHigh     = "high"
	SeverityCritical = "critical"
)

// bounds is the range a score is kept inside.
type bounds struct{ floor, ceil int }

// classBounds keeps each class's score inside a range that matches what the
// class can mean: a person never nears the detection threshold, a search
// crawler or link previewer never triggers an event, a bot or an AI crawler is
// at most medium, scanners and AI agents at most high, and only a malicious AI
// agent reaches critical. The ceilings rise along the order in which tripwires
// move a session (HUMAN/CRAWLER → BOT/AI_* → AI_AGENT → AI_AGENT_MALICIOUS), so
// adding a tripwire never lowers a score.
var classBounds = map[string]bounds{
	ClassHuman:            {0, 25},
	ClassCrawler:          {0, 35},
	ClassBot:              {0, 69},
	ClassAICrawler:        {0, 69},
	ClassAIAssistant:      {0, 69},
	ClassScanner:          {0, 89},
	ClassAIAgent:          {0, 89},
	ClassAIAgentMalicious: {70, 100},
}

// actedBounds replace a BOT's or SCANNER's classBounds when it used a planted
// credential or called a decoy tool without any AI evidence (Judge's rule 2): it
// acted against the site, so it is high whatever else, but without evidence that
// a model was involved it is not critical, which only a malicious AI agent is.
// The range lies between the plain classes' and AI_AGENT_MALICIOUS's, so adding AI
// evidence to such a session (which makes it AI_AGENT_MALICIOUS) never lowers it.
var actedBounds = bounds{70, 89}

// browserProbeBounds replace a SCANNER's classBounds when a browser user agent's only
// evidence is SYSTEMATIC_PROBING (no tripwire, no scanner user agent): people behind
// one office NAT share an address and a browser build, so their mistakes add up in one
// session. It stays a SCANNER to look at, below the detection threshold: no event.
var browserProbeBounds = bounds{0, DetectionThreshold - 1}

// curiosityBounds replace a BOT's classBounds when a browser user agent did nothing but
// follow one hidden link, not at machine speed (Curious): a person who read the page
// source and opened the link it found. It stays a BOT to look at, below the detection
// threshold: no event. Anything more lifts the cap.
var curiosityBounds = bounds{0, DetectionThreshold - 1}

// curiositySignals are the only signals a curious visitor (Curious) may have.
var curiositySignals = map[string]bool{
	SignalCallbackHit: true, SignalLLMSpeedFollowup: true, SignalHumanSpeedFollowup: true, SignalVisibleLinkOpened: true,
}

// Curious reports whether the evidence is a browser user agent's curiosity: one hidden
// link opened (CALLBACK_HIT once, by GET or HEAD) one second or more after the decoy was
// served (or untimed), and nothing else — no second hidden link, no machine-speed follow-up, no
// injection followed, no secret used, no robots.txt rule ignored, no probing, no claim
// of another identity. Judge keeps such a session below the detection threshold.
func Curious(e Evidence) bool {
	if e.Agent.Kind != KindUnknown || e.Sent > 0 || e.Signals[SignalCallbackHit] != 1 ||
		e.Signals[SignalLLMSpeedFollowup]+e.Signals[SignalHumanSpeedFollowup] > 1 {
		return false
	}
	for name, n := range e.Signals {
		if n > 0 && !curiositySignals[name] {
			return false
		}
	}
	return true
}

// DetectionThreshold is the score from which a non-human, non-crawler
// session counts as detected (see Detected).
const DetectionThreshold = 40

// Evidence is what Judge weighs for one session.
type Evidence struct {
	Signals map[string]int // occurrences per signal name; unknown names weigh nothing
	Agent   Agent          // LookupUA of the session's user agent
	Hits    int            // requests in the session
	// Sent counts requests that sent something (not GET or HEAD) with a token of hidden
	// content (SessionState.Sent): more than opening a link, never curiosity.
	Sent int
}

// Verdict is Judge's answer.
type Verdict struct {
	Classification string // one of the Class… constants
	Score          int    // 0–100: how much the session matters
	Confidence     int    // 0–100: how sure the classification is
	Severity       string // critical, high, medium or low
}

// Detected reports whether a verdict is a detection: the engine emits
// threat.detected when a session first becomes detected, and
// threat.escalated whenever its severity rises after that. People and
// search crawlers are never detections.
func Detected(v Verdict) bool {
	return v.Score >= DetectionThreshold && v.Classification != ClassHuman && v.Classification != ClassCrawler
}

// SeverityRank orders severities (low 0 … critical 3; unknown -1), for
// comparing a session's old and new severity.
func SeverityRank(s string) int {
	switch s {
	case SeverityLow:
		return 0
	case SeverityMedium:
		return 1
	case SeverityHigh:
		return 2
	case SeverityCritical:
		return 3
	}
	return -1
}

// Judge classifies a session. The first rule that applies wins:
//
//  1. SYSTEM_PROMPT_LEAKED, or CREDENTIAL_USED or TOOL_INVOKED with AI evidence
//     → AI_AGENT_MALICIOUS.
//  2. CREDENTIAL_USED or TOOL_INVOKED without AI evidence → SCANNER (with
//     SCANNER_UA or SYSTEMATIC_PROBING) or BOT, kept high (actedBounds): a
//     person or a script with curl acted against the site, but nothing says a
//     model did.
//  3. INJECTION_FOLLOWED → AI_AGENT.
//  4. SCANNER_UA or SYSTEMATIC_PROBING → SCANNER.
//  5. SIGNATURE_INVALID, or UNVERIFIED_BOT_CLAIM without CRAWLER_VERIFIED → BOT:
//     the claimed identity is false (a forged or replayed signature, a crawler's
//     name that neither its operator's reverse DNS, its ranges nor a signature from
//     its operator's origin back), so nothing the user agent says is believed. A
//     proved identity is never an unverified claim: the claim then weighs nothing
//     either. A valid signature from another origin proves only its signer.
//  6. A known AI user agent → AI_AGENT, AI_ASSISTANT or AI_CRAWLER by its
//     category (ai_search is AI_CRAWLER), with or without CALLBACK_HIT.
//  7. A search-crawler user agent → CRAWLER (also when it follows hidden
//     links: search engines do).
//  8. CALLBACK_HIT → BOT: a parser followed a link no person can see.
//  9. A link-preview user agent → CRAWLER: a chat or social app fetching a
//     link someone shared; never an AI class.
//  10. An automation, headless or empty user agent, or a verified signed agent
//     (SIGNED_AGENT_VERIFIED) → BOT.
//  11. Otherwise HUMAN.
//
// AI evidence (AIEvidence) is what a regex or a person at a terminal does not
// produce: INJECTION_FOLLOWED, SYSTEM_PROMPT_LEAKED, a known AI user agent, or
// a hidden link followed at LLM speed (LLM_SPEED_FOLLOWUP, which Observe fires
// only for hidden content followed, never for the credential or tool use itself).
//
// The user agent's signal (UASignal of e.Agent) counts even when the engine
// did not put it in e.Signals. Judge does not allocate and is safe for
// concurrent use.
func Judge(e Evidence) Verdict {
	v, _, _ := judge(e)
	return v
}

// AIEvidence reports whether the evidence shows a model at work (see Judge).
func AIEvidence(e Evidence) bool {
	return aiEvidence(e, aiKindOf(e))
}

func aiEvidence(e Evidence, aiKind Kind) bool {
	return e.Signals[SignalInjectionFollowed] > 0 || e.Signals[SignalSystemPromptLeaked] > 0 ||
		e.Signals[SignalLLMSpeedFollowup] > 0 || aiKind.IsAI()
}

// aiKindOf is the AI kind the user agent or its recorded signal claims, or the agent's kind.
func aiKindOf(e Evidence) Kind {
	k := e.Agent.Kind
	if !k.IsAI() {
		switch {
		case e.Signals[SignalKnownAIAgentUA] > 0:
			k = KindAIAgent
		case e.Signals[SignalKnownAIAssistantUA] > 0:
			k = KindAIAssistant
		case e.Signals[SignalKnownAICrawlerUA] > 0:
			k = KindAICrawler
		}
	}
	return k
}

// judge is Judge, also saying which of its rules (1–11) chose the class and the
// bounds that held the score, for Explain.
func judge(e Evidence) (v Verdict, rule int, b bounds) {
	has := func(name string) bool { return e.Signals[name] > 0 }
	uaSig := UASignal(e.Agent)
	hasUA := func(name string) bool { return uaSig == name || has(name) }

	// The claimed identity was proved (its operator's reverse DNS, ranges or signature):
	// no false claim. A signature from anyone else proves only its signer (rule 10).
	verified := has(SignalCrawlerVerified)
	raw := 0
	for name, n := range e.Signals {
		raw += points(e, name, n)
	}
	if uaSig != "" && !has(uaSig) {
		raw += weigh(uaSig, 1)
	}

	acted := 0 // credential used, tool called
	for _, t := range []string{SignalCredentialUsed, SignalToolInvoked} {
		if has(t) {
			acted++
		}
	}
	probeOnly, curious := false, false
	aiKind := aiKindOf(e)
	aiEv := aiEvidence(e, aiKind)
	malicious := acted
	if has(SignalSystemPromptLeaked) {
		malicious++
	}

	switch {
	case has(SignalSystemPromptLeaked) || acted > 0 && aiEv:
		rule = 1
		v.Classification = ClassAIAgentMalicious
		v.Confidence = 90
		if has(SignalSystemPromptLeaked) {
			v.Confidence = 95
		}
		if has(SignalCredentialUsed) {
			v.Confidence = 97
		}
		v.Confidence += 2 * (malicious - 1)
		if has(SignalInjectionFollowed) {
			v.Confidence += 2
		}
	case acted > 0:
		rule = 2
		// Sure it acted against the site; the class says only what kind of
		// client did, and nothing says a model was involved.
		v.Confidence = 85
		if has(SignalCredentialUsed) {
			v.Confidence = 90
		}
		v.Classification = ClassBot
		if hasUA(SignalScannerUA) || has(SignalSystematicProbing) {
			v.Classification = ClassScanner
		}
	case has(SignalInjectionFollowed):
		rule = 3
		v.Classification = ClassAIAgent
		v.Confidence = 90
		if aiKind == KindAIAgent {
			v.Confidence += 5
		}
		if has(SignalLLMSpeedFollowup) {
			v.Confidence += 3
		}
	case hasUA(SignalScannerUA) || has(SignalSystematicProbing):
		rule = 4
		v.Classification = ClassScanner
		// A browser whose only evidence is probing may be people behind one address:
		// a SCANNER to look at, never an event (browserProbeBounds).
		probeOnly = e.Agent.Kind == KindUnknown && !hasUA(SignalScannerUA) && !has(SignalCallbackHit) && !has(SignalClientStackMismatch)
		switch {
		case hasUA(SignalScannerUA) && has(SignalSystematicProbing):
			v.Confidence = 90
		case has(SignalSystematicProbing):
			v.Confidence = 75
		default:
			v.Confidence = 70
		}
	case has(SignalSignatureInvalid) || has(SignalUnverifiedBotClaim) && !verified:
		rule = 5
		v.Classification = ClassBot
		v.Confidence = 80
		if has(SignalSignatureInvalid) {
			v.Confidence = 90 // a signature that does not verify was made to deceive, or broken on the way
		}
	case aiKind.IsAI():
		rule = 6
		switch aiKind {
		case KindAIAgent:
			v.Classification = ClassAIAgent
		case KindAIAssistant:
			v.Classification = ClassAIAssistant
		default:
			v.Classification = ClassAICrawler
		}
		v.Confidence = 60 // a user agent is only a claim
		if has(SignalCallbackHit) {
			v.Confidence += 15 // and it behaves like the machine it claims to be
		}
		if verified || Verifiable(e.Agent) {
			v.Confidence += 20 // its operator's reverse DNS, ranges or signature backed it
		}
	case hasUA(SignalSearchCrawlerUA):
		rule = 7
		v.Classification = ClassCrawler
		v.Confidence = 65
		if verified || Verifiable(e.Agent) {
			v.Confidence = 95
		}
	case has(SignalCallbackHit):
		rule = 8
		v.Classification = ClassBot
		v.Confidence = 85
		if e.Agent.Kind == KindUnknown && !has(SignalMachineSpeedFollowup) && !has(SignalLLMSpeedFollowup) && !has(SignalClientStackMismatch) {
			// A browser that followed hidden links only slowly may be a
			// person reading the page source: a BOT, but not a sure one.
			v.Confidence = 55
		}
		// One hidden link opened from a browser, not at machine speed, and nothing
		// else is curiosity: below the detection threshold (curiosityBounds).
		if curious = Curious(e); curious {
			v.Confidence = 55
		}
	case hasUA(SignalLinkPreviewUA):
		rule = 9
		v.Classification = ClassCrawler
		v.Confidence = 65 // a user agent is only a claim, and previewers publish no ranges
	case hasUA(SignalAutomationClientUA) || hasUA(SignalHeadlessBrowserUA) || hasUA(SignalEmptyUA) || has(SignalClientStackMismatch) || has(SignalSignedAgentVerified):
		rule = 10
		v.Classification = ClassBot
		v.Confidence = 70
		switch {
		case has(SignalSignedAgentVerified):
			v.Confidence = 95 // its own key says it is an agent
		case has(SignalClientStackMismatch):
			v.Confidence = 80 // not a person: a library dressed as a browser
		case hasUA(SignalEmptyUA):
			v.Confidence = 60
		}
	default:
		rule = 11
		v.Classification = ClassHuman
		// How sure we are there is nothing: more quiet hits, more certainty;
		// each behavioural oddity takes some away.
		v.Confidence = 50 + 5*max(e.Hits-1, 0)
		v.Confidence = min(v.Confidence, 90)
		for _, s := range []string{SignalRobotsDisallowIgnored, SignalMachineSpeedFollowup, SignalLLMSpeedFollowup} {
			if has(s) {
				v.Confidence -= 15
			}
		}
		v.Confidence = max(v.Confidence, 30)
	}
	if has(SignalClientStackMismatch) && rule != 10 && v.Classification != ClassHuman {
		v.Confidence += 5 // whatever it is, it lied about its client
	}
	v.Confidence = min(v.Confidence, 99)

	b = classBounds[v.Classification]
	switch {
	case rule == 2:
		b = actedBounds
	case probeOnly:
		b = browserProbeBounds
		v.Confidence = min(v.Confidence, 60)
	case curious:
		b = curiosityBounds
	}
	v.Score = min(max(min(raw, 100), b.floor), b.ceil)
	v.Severity = severityFor(v.Score)
	if v.Classification == ClassAIAgentMalicious && SeverityRank(v.Severity) < SeverityRank(SeverityHigh) {
		v.Severity = SeverityHigh
	}
	return v, rule, b
}

// points is what n occurrences of a signal add to e's raw score: its weight (weigh), but
// nothing for an unverified claim in a session whose claimed identity was proved
// (CRAWLER_VERIFIED: its operator's reverse DNS, ranges or signature).
func points(e Evidence, name string, n int) int {
	if name == SignalUnverifiedBotClaim && e.Signals[SignalCrawlerVerified] > 0 {
		return 0
	}
	return weigh(name, n)
}

// weigh is a signal's contribution for n occurrences: w + w/2 + w/4 + …
// (n terms), or w once for identity signals.
func weigh(name string, n int) int {
	sig := signalsByName[name] // an unknown name weighs nothing
	w := sig.Weight
	if n <= 0 || w <= 0 {
		return 0
	}
	if sig.Once {
		return w
	}
	total := 0
	for ; n > 0 && w > 0; n-- {
		total += w
		w /= 2
	}
	return total
}

// severityFor maps a score to a severity: critical ≥ 90, high ≥ 70,
// medium ≥ 40 (DetectionThreshold), else low.
func severityFor(score int) string {
	switch {
	case score >= 90:
		return SeverityCritical
	case score >= 70:
		return SeverityHigh
	case score >= DetectionThreshold:
		return SeverityMedium
	}
	return SeverityLow
}
