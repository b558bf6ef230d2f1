package detect

import "time"

// Signal names, as stored in a session's signals_fired and sent in events.
const (
	// Tripwires: things only a machine reading the hidden decoy content does.
	SignalCallbackHit        = "CALLBACK_HIT"
	SignalInjectionFollowed  = "INJECTION_FOLLOWED"
	SignalSystemPromptLeaked = "SYSTEM_PROMPT_LEAKED"
	SignalCredentialUsed     = "CREDENTIAL_USED"
	SignalToolInvoked        = "TOOL_INVOKED"

	// Supporting signals: who the client says it is, and how it behaves.
	SignalKnownAIAgentUA        = "KNOWN_AI_AGENT_UA"
	SignalKnownAIAssistantUA    = "KNOWN_AI_ASSISTANT_UA"
	SignalKnownAICrawlerUA      = "KNOWN_AI_CRAWLER_UA"
	SignalSearchCrawlerUA       = "SEARCH_CRAWLER_UA"
	SignalLinkPreviewUA         = "LINK_PREVIEW_UA"
	SignalAutomationClientUA    = "AUTOMATION_CLIENT_UA"
	SignalHeadlessBrowserUA     = "HEADLESS_BROWSER_UA"
	SignalEmptyUA               = "EMPTY_UA"
	SignalScannerUA             = "SCANNER_UA"
	SignalUnverifiedBotClaim    = "UNVERIFIED_BOT_CLAIM"
	SignalCrawlerVerified       = "CRAWLER_VERIFIED"
	SignalRobotsDisallowIgnored = "ROBOTS_DISALLOW_IGNORED"
	SignalMachineSpeedFollowup  = "MACHINE_SPEED_FOLLOWUP"
	SignalLLMSpeedFollowup      = "LLM_SPEED_FOLLOWUP"
	SignalHumanSpeedFollowup    = "HUMAN_SPEED_FOLLOWUP"
	SignalSystematicProbing     = "SYSTEMATIC_PROBING"
	SignalVisibleLinkOpened     = "VISIBLE_LINK_OPENED"
	SignalClientStackMismatch   = "CLIENT_STACK_MISMATCH"

	// What the request proved by its HTTP message signature (Web Bot Auth).
	SignalSignedAgentVerified   = "SIGNED_AGENT_VERIFIED"
	SignalSignatureInvalid      = "SIGNATURE_INVALID"
	SignalSignatureUnverifiable = "SIGNATURE_UNVERIFIABLE"
)

// SignalInfo is one signal: everything the engine, the documentation and the dashboard
// know of it, in one row.
type SignalInfo struct {
	Name     string
	Tripwire bool // a deliberate bait only a machine reading hidden content takes
	// Weight is the points its first firing adds to a session's score. Repeats add half
	// of the previous repeat (w, w/2, w/4, …), so a signal contributes less than 2×w.
	Weight int
	// Once marks an identity signal, which describes the session rather than an event:
	// its weight counts once however many hits carried it.
	Once    bool
	Meaning string
}

// signalTable is the one list of signals; its order is the documented order. The sum of
// weights is capped at 100 and then bounded by the classification's range (classBounds).
var signalTable = []SignalInfo{
	// An agent handing over its own instructions: critical on its own.
	{SignalSystemPromptLeaked, true, 95, false, "The visitor sent text that reads as its own system prompt or instructions (a role, rules) to a sink the hidden content invited it to use; a refusal, an apology or an acknowledgement is not one."},
	// Only a reader of the hidden content has the credential.
	{SignalCredentialUsed, true, 90, false, "A planted secret from a decoy (an API key, a database or Redis password, a session secret, an AWS access key id or secret access key) was presented later, anywhere in a request; the detail names which. Without AI evidence it makes a malicious BOT or SCANNER (high), not an AI class."},
	// Acting on a decoy tool is acting against the site.
	{SignalToolInvoked, true, 85, false, "A decoy tool (e.g. on a decoy MCP endpoint) was called. Without AI evidence it makes a malicious BOT or SCANNER (high), not an AI class."},
	// What marks an AI agent; high on its own.
	{SignalInjectionFollowed, true, 75, false, "The visitor carried out a plain-language instruction from hidden content that a regex crawler cannot: a computed value, an echoed canary phrase, a system prompt, a refusal or an acknowledgement sent to the sink (anything else sent there is a CALLBACK_HIT)."},
	// A parser followed a hidden link: automation, not yet AI.
	{SignalCallbackHit, true, 30, false, "A URL that appeared only in a decoy's hidden content was requested (from any address). Proves a parser followed a link; alone it makes a BOT."},
	// An autonomous agent on a trap is worth an event.
	{SignalKnownAIAgentUA, false, 40, true, "User agent of an autonomous AI agent (ai.robots.txt: AI Agents, AI Coding Agents, Undocumented AI Agents)."},
	// Fetching for one user; an event once it does more.
	{SignalKnownAIAssistantUA, false, 30, true, "User agent of an AI assistant fetching for one user's prompt (ChatGPT-User, Claude-User, Perplexity-User)."},
	// Crawling is expected; not an event by itself.
	{SignalKnownAICrawlerUA, false, 25, true, "User agent of an AI training, data or AI-search crawler (GPTBot, ClaudeBot, CCBot, OAI-SearchBot, PerplexityBot)."},
	// Search engines are welcome.
	{SignalSearchCrawlerUA, false, 0, true, "User agent of a search-engine crawler (Googlebot, bingbot, …)."},
	// A chat or social app unfurling a link someone shared: never an AI class, never an event.
	{SignalLinkPreviewUA, false, 0, true, "User agent of a link previewer fetching a shared link for a chat or social app (facebookexternalhit, Slackbot-LinkExpanding, WhatsApp, LinkedInBot, Discordbot, Twitterbot, TelegramBot)."},
	{SignalAutomationClientUA, false, 15, true, "User agent of an HTTP library, command-line tool, crawling framework or self-declared bot, or any user agent on no list that is not browser-shaped."},
	{SignalHeadlessBrowserUA, false, 20, true, "User agent of a headless or driven browser (HeadlessChrome, PhantomJS, Selenium, …)."},
	{SignalEmptyUA, false, 15, true, "No user agent at all."},
	// A scanner announcing itself is worth an event.
	{SignalScannerUA, false, 45, true, "User agent of a vulnerability or internet-wide scanner (Nmap, sqlmap, nuclei, …)."},
	// A forged browser identity: automation, whatever it is.
	{SignalClientStackMismatch, false, 30, true, "The user agent claims a browser (Chrome, Edge, Firefox, Safari…) and the connection's TLS or HTTP/2 stack is a library's (curl, Python, Go, Node, Java), by its JA4 or HTTP/2 fingerprint (docs/detection.md, client stacks). Alone it makes a BOT, never an AI class; it adds confidence to what else fired."},
	// A forged crawler identity is deliberate.
	{SignalUnverifiedBotClaim, false, 40, true, "The user agent claims a crawler whose operator publishes address ranges or documents forward-confirmed reverse DNS, and neither backs it: an address outside the ranges (reverse DNS inconclusive or failed), or, for an operator with DNS only, no PTR record, a PTR host outside the documented domains, or one that does not resolve back. The detail says which. Never after CRAWLER_VERIFIED in the session."},
	// An identity, not an event: the operator vouches for the address.
	{SignalCrawlerVerified, false, 0, true, "The user agent claims a crawler and its operator backs it: forward-confirmed reverse DNS under the operator's documented domains, an address in its published ranges, or a verified Web Bot Auth signature from the operator's own origin (chatgpt.com for OpenAI's agents). The detail names the host name, the prefix and the list's date, or the signing origin. It outweighs an earlier UNVERIFIED_BOT_CLAIM of the session (a first hit whose reverse DNS was not answered in time)."},
	{SignalRobotsDisallowIgnored, false, 20, false, "A path that robots.txt disallows was requested."},
	{SignalMachineSpeedFollowup, false, 15, false, "A hidden link was followed less than 1 s after the decoy was served."},
	// A model read the page before acting.
	{SignalLLMSpeedFollowup, false, 20, false, "A hidden link was followed 1–90 s after the decoy was served. AI evidence: with it, a used credential or a called tool makes an AI_AGENT_MALICIOUS."},
	// Slow follow-ups say nothing against a person.
	{SignalHumanSpeedFollowup, false, 0, false, "A hidden link was followed more than 90 s after the decoy was served."},
	// Wordlist behaviour, whatever the user agent says.
	{SignalSystematicProbing, false, 45, true, "ProbingThreshold (8) or more distinct unknown paths within ProbeWindow (10 min) in one session, typos of known paths never counted; from a browser user agent only wordlist paths (.env, wp-admin, .git/config, …) count, and probing alone never raises an event for it."},
	// Reading, not parsing: a person opens the links llms.txt and robots.txt show.
	{SignalVisibleLinkOpened, false, 0, false, "A browser opened a link that llms.txt or robots.txt shows in plain text, or clicked a proxy lure on the site's own page (a screen reader reads it out): a person can reach it, so it is not a hidden link followed (no CALLBACK_HIT)."},
	// A proved identity, not a threat: it weighs nothing, and it is never an unverified claim.
	{SignalSignedAgentVerified, false, 0, true, "The request carried a Web Bot Auth signature (RFC 9421, Ed25519) that verifies with a key of the key directory its Signature-Agent names; the detail says \"verified: <agent> (key <keyid>)\". It proves who signed, not what the user agent claims: the claimed crawler or agent is backed (CRAWLER_VERIFIED) only when the signer's origin is its operator's; alone it makes a BOT."},
	// A forged or replayed identity is deliberate, like a false crawler claim.
	{SignalSignatureInvalid, false, 40, true, "The request carried a Web Bot Auth signature that does not verify (tampered, wrong or unknown key, malformed), is outside its created/expires window, or was replayed (its nonce already seen); the detail says why. Makes at least a BOT, whatever the user agent says."},
	// Nothing proved either way: told, never weighed.
	{SignalSignatureUnverifiable, false, 0, true, "The request carried a signature this instance could not check: its key directory unreachable, refused or not fetched within the wait budget, an algorithm other than Ed25519, no Signature-Agent, no web-bot-auth tag; the detail says why."},
}

// signalsByName indexes signalTable.
var signalsByName = func() map[string]SignalInfo {
	m := make(map[string]SignalInfo, len(signalTable))
	for _, s := range signalTable {
		if _, dup := m[s.Name]; dup {
			panic("detect: signal " + s.Name + " listed twice")
		}
		m[s.Name] = s
	}
	return m
}()

// Weights is each signal's weight, as signalTable gives it.
var Weights = func() map[string]int {
	m := map[string]int{}
	for _, s := range signalTable {
		m[s.Name] = s.Weight
	}
	return m
}()

// Signal returns the row of a signal, and whether it is one.
func Signal(name string) (SignalInfo, bool) {
	s, ok := signalsByName[name]
	return s, ok
}

// Signals returns every signal, tripwires first, in documented order.
func Signals() []SignalInfo {
	return append([]SignalInfo(nil), signalTable...)
}

// IsTripwire reports whether name is a tripwire signal.
func IsTripwire(name string) bool { return signalsByName[name].Tripwire }

// UASignal is the signal a user agent contributes, "" for an unrecognised
// one (a browser). ai_search agents count as AI crawlers.
func UASignal(a Agent) string {
	switch a.Kind {
	case KindAIAgent:
		return SignalKnownAIAgentUA
	case KindAIAssistant:
		return SignalKnownAIAssistantUA
	case KindAISearch, KindAICrawler:
		return SignalKnownAICrawlerUA
	case KindSearchCrawler:
		return SignalSearchCrawlerUA
	case KindLinkPreview:
		return SignalLinkPreviewUA
	case KindAutomation:
		return SignalAutomationClientUA
	case KindHeadless:
		return SignalHeadlessBrowserUA
	case KindEmpty:
		return SignalEmptyUA
	case KindScanner:
		return SignalScannerUA
	}
	return ""
}

// Follow-up timing bounds. The delay is measured from serving a decoy to the
// request for a link that only its hidden content held; a person never sees
// those links, so the delay says what kind of machine read the page:
//   - under MachineSpeedLimit no model has read the page: a parser extracted
//     the URL and fetched it (a model call with a page of context takes
//     seconds before its first token, let alone a tool call);
//   - up to LLMSpeedLimit is one to a few model round trips, the time an
//     agent loop takes to read the page, decide and act;
//   - beyond that the link was followed later: a crawl queue, a scheduled
//     job, or a person copying it out of the source.
const (
	MachineSpeedLimit = time.Second
	LLMSpeedLimit     = 90 * time.Second
)

// FollowUpSignal classifies the delay between serving a decoy and the
// follow-up request it caused. A negative delay (clock skew) yields "".
func FollowUpSignal(delay time.Duration) string {
	switch {
	case delay < 0:
		return ""
	case delay < MachineSpeedLimit:
		return SignalMachineSpeedFollowup
	case delay <= LLMSpeedLimit:
		return SignalLLMSpeedFollowup
	}
	return SignalHumanSpeedFollowup
}

// ProbingThreshold is the number of distinct unknown paths within one
// session (and ProbeWindow, typos aside: see ProbeCounts) that marks systematic probing. Eight is well above what a person
// produces by mistyping or following stale links (one to three) and well
// below a scanner's wordlist, which tries hundreds.
const ProbingThreshold = 8
