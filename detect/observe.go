package detect

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/flytrap/flytrap/ent/schematype"
)

// Session is what the engine knows of one visitor's session between its requests.
type Session struct {
	UA       string    // the session's own visitor's user agent (whoever brings its tokens)
	Hits     int       // requests so far
	Last     time.Time // the latest request
	Fired    []string  // signal names, in the order each first fired
	Traps    []string  // trap ids, in the order each was first hit
	Model    string    // extracted from a leaked prompt
	Operator string
	State    schematype.SessionState
}

// Clone copies s deeply enough that changing the copy leaves s as it was.
func (s Session) Clone() Session {
	s.Fired = slices.Clone(s.Fired)
	s.Traps = slices.Clone(s.Traps)
	s.State.Signals = maps.Clone(s.State.Signals)
	if s.State.Signals == nil {
		s.State.Signals = map[string]int{}
	}
	s.State.Disallowed = slices.Clone(s.State.Disallowed)
	s.State.Linked = slices.Clone(s.State.Linked)
	s.State.ProbePaths = slices.Clone(s.State.ProbePaths)
	s.State.ProbeAt = slices.Clone(s.State.ProbeAt)
	return s
}

// Use is what a token that came back was planted for.
type Use uint8

const (
	UseCallback   Use = iota + 1 // a hidden link
	UseChallenge                 // a value to compute
	UseCanary                    // a phrase to echo
	UseSink                      // an endpoint to post instructions to
	UseCredential                // a planted secret
	UseTool                      // a decoy tool's argument (MCP authorization_ref)
	UseOther
)

// TokenUse is a token of one of our decoys that came back in a request.
type TokenUse struct {
	Use       Use
	SourceHit string    // the hit whose decoy carried it
	SourceAt  time.Time // when that decoy was served; zero: unknown (a lure snippet), no follow-up timing
	Placement string    // where in the decoy it sat, e.g. "callback#2"
	Answered  bool      // a challenge: the request carried the computed answer
	Answer    string    // a challenge's answer, for the evidence
	Secret    string    // a credential: which planted secret ("database password", "stripe API key")
	// Visible says the token's link sat in text a person reads (llms.txt, robots.txt),
	// or was a proxy lure clicked on the site's own page (trap.clickedOnPage): a browser
	// opening it is reading, not following hidden content.
	Visible bool
	// Lure says it came from a lure in the customer's own pages (the lure proxy's, or a
	// snippet), not from a decoy; Carrier is the page of the site that carried it, when known.
	Lure    bool
	Carrier string
}

// Observation is one request as the engine sees it: the trap listener resolves tokens
// and routes; everything here is the visitor's, and nothing is trusted. It is the one
// struct of a request's facts: the listener fills it (record.Hit embeds it), the writer
// stores what the hits table keeps of it and hands it to Observe with its Tokens resolved.
// A fact a signal needs is a field here, set by the listener (docs/architecture.md).
type Observation struct {
	At       time.Time
	Method   string
	Host     string
	Path     string
	Query    string
	Body     string
	Headers  map[string][]string
	IP       netip.Addr
	UA       string
	Kind     string // decoy, callback, not_found
	TrapID   string // the trap it hit, if any
	TrapType string
	Tokens   []TokenUse // tokens of this organization's stored hits, nothing else
	Tool     string     // mcp: the decoy tool invoked, and its arguments
	ToolArgs string
	Disallow []string // a robots.txt trap was hit: the paths its decoy disallowed (none when not served)
	Linked   []string // a decoy was served: the same-site paths it links to
	Known    []string // the site's trap paths: an unknown path near one is a typo, not a probe
	// What forward-confirmed reverse DNS found for IP when UA claims a crawler whose
	// operator documents it (the listener's crawler.Verifier; DNSNotChecked otherwise),
	// and the PTR record's host name ("" when none). CheckClaim weighs them.
	DNS     DNSCheck
	DNSHost string

	// What the connection proved of the client (package fingerprint), beside what it
	// claims (UA): its TLS ClientHello's JA4 ("" over plain HTTP; from a trusted CDN's
	// header behind one), its HTTP/2 fingerprint (Akamai's format), the order of its
	// header names, and the client stack family they point to ("" when unknown), which
	// the listener resolves (fingerprint.Family): detect only compares it with the claim.
	JA4         string
	H2          string
	HeaderOrder string
	Stack       string

	// Signature is what the listener proved of the request's HTTP message signature (Web
	// Bot Auth, package botauth): a verified agent, or why not.
	Signature Signature
}

// Firing is one signal a request fired, with its evidence.
type Firing struct {
	Name      string
	Placement string
	Source    string // the hit whose token brought it
	Delay     *int64 // milliseconds since that hit
	Detail    string
}

// CapturedPrompt is text a request carried that reads as its sender's system prompt.
type CapturedPrompt struct {
	Prompt Prompt
	Source string // json_field, form_field, body, query, or a provider shape (Shape…)
}

// Outcome is what one request changed.
type Outcome struct {
	Firings   []Firing
	Prompts   []CapturedPrompt
	Verdict   Verdict // the session judged anew
	Tripwires int     // tripwire firings among Firings
	Changed   bool    // the session's lists or state changed, not only its counters
}

// Limits of what a session remembers between requests.
const (
	MaxLinked = 256 // linked paths
	MaxProbes = 32  // distinct unknown paths
)

// Observe is the engine's core: it fires the signals one request earns, given what its
// session showed before, and judges the session anew. It is pure: s is not changed; the
// session after the request is returned.
func Observe(s Session, o Observation) (Session, Outcome) {
	// Only the counts map is changed in place: the lists are clipped, so an append copies
	// them instead of writing into the caller's arrays. A hit costs no copy of a session's
	// linked paths (up to 256) unless it adds one.
	s.State.Signals = maps.Clone(s.State.Signals)
	if s.State.Signals == nil {
		s.State.Signals = map[string]int{}
	}
	s.Fired, s.Traps = slices.Clip(s.Fired), slices.Clip(s.Traps)
	s.State.Linked, s.State.ProbePaths = slices.Clip(s.State.Linked), slices.Clip(s.State.ProbePaths)
	s.State.ProbeAt = slices.Clip(s.State.ProbeAt)
	var out Outcome
	fire := func(f Firing) {
		out.Changed = true
		out.Firings = append(out.Firings, f)
		s.State.Signals[f.Name]++
		if !slices.Contains(s.Fired, f.Name) {
			s.Fired = append(s.Fired, f.Name)
		}
		if IsTripwire(f.Name) {
			out.Tripwires++
		}
	}
	once := func(name, detail string) {
		if s.State.Signals[name] == 0 {
			fire(Firing{Name: name, Detail: detail})
		}
	}
	// Who this request says it is: a token may bring another client into the session.
	client := LookupUA(o.UA)
	if sig := UASignal(client); sig != "" {
		once(sig, client.Name)
	}
	// A verified signature proves who signed: it backs the user agent's claim only when the
	// signer is the claimed agent's operator (SignatureVouches), as its reverse DNS or ranges do.
	vouched := o.Signature.State == SignatureValid && SignatureVouches(client, o.Signature.Agent)
	switch c := CheckClaim(client, o.IP, o.DNS, o.DNSHost); c.Result {
	case ClaimVerified:
		if s.State.Signals[SignalCrawlerVerified] == 0 {
			once(SignalCrawlerVerified, c.Detail())
		}
	case ClaimUnverified:
		switch {
		case vouched:
			if s.State.Signals[SignalCrawlerVerified] == 0 {
				once(SignalCrawlerVerified, client.Name+" signed by its operator's "+o.Signature.Agent)
			}
		case s.State.Signals[SignalUnverifiedBotClaim] == 0 && s.State.Signals[SignalCrawlerVerified] == 0:
			// a session its operator vouched for stays verified
			once(SignalUnverifiedBotClaim, c.Detail())
		}
	}
	if client.Kind == KindUnknown { // a browser-shaped user agent: does the connection agree?
		if d := StackMismatch(o.UA, o.Stack); d != "" {
			once(SignalClientStackMismatch, d)
		}
	}
	switch o.Signature.State {
	case SignatureValid:
		once(SignalSignedAgentVerified, o.Signature.Text())
	case SignatureInvalid, SignatureReplayed:
		fire(Firing{Name: SignalSignatureInvalid, Detail: o.Signature.Text()})
	case SignatureUnverifiable:
		once(SignalSignatureUnverifiable, o.Signature.Text())
	}

	sent := false
	for _, t := range o.Tokens {
		if !sent && t.Use != UseCredential && t.Use != UseTool && o.Method != "" && o.Method != "GET" && o.Method != "HEAD" {
			sent = true
			s.State.Sent++
			out.Changed = true
		}
		if t.Use == UseCallback && t.Visible && client.Kind == KindUnknown {
			fire(Firing{Name: SignalVisibleLinkOpened, Source: t.SourceHit, Placement: t.Placement, Detail: o.Method + " " + o.Path})
			continue
		}
		f := Firing{Source: t.SourceHit, Placement: t.Placement, Detail: o.Method + " " + o.Path + lureNote(t), Name: SignalCallbackHit}
		delay := o.At.Sub(t.SourceAt).Milliseconds()
		timed := !t.SourceAt.IsZero() // a lure snippet's token was never served at a known time
		if timed {
			f.Delay = &delay
		}
		switch t.Use {
		case UseChallenge:
			if t.Answered {
				f.Name, f.Detail = SignalInjectionFollowed, "computed the challenge: "+t.Answer
			}
		case UseCanary:
			f.Name, f.Detail = SignalInjectionFollowed, "echoed the canary phrase"
		case UseSink:
			// Only a system prompt proves the instruction was understood and
			// followed; "test" or a URL's own bytes sent there are a callback.
			// A refusal, an apology or an acknowledgement answers the instruction
			// (INJECTION_FOLLOWED) but leaks nothing: it is never captured as a prompt.
			n := len(out.Prompts)
			reply := ReplyNone
			for _, c := range sinkTexts(o, 1) {
				if c.shaped == nil {
					if r := ReadReply(c.text); r != ReplyNone {
						reply = max(reply, r)
						continue
					}
					if len(strings.TrimSpace(c.text)) < minPromptCandidate {
						continue
					}
				}
				p, ok := AnalyzePrompt(c.text)
				if c.shaped != nil {
					p, ok = AnalyzeSystemPrompt(*c.shaped)
				}
				if ok && !slices.ContainsFunc(out.Prompts, func(q CapturedPrompt) bool { return q.Prompt.Hash == p.Hash }) {
					out.Prompts = append(out.Prompts, CapturedPrompt{Prompt: p, Source: c.source})
				}
			}
			switch {
			case len(out.Prompts) > n:
				f.Name, f.Detail = SignalInjectionFollowed, "sent its instructions to the sink it was told to"
			case reply == ReplyRefusal:
				f.Name, f.Detail = SignalInjectionFollowed, "answered the sink with a refusal (nothing leaked)"
			case reply == ReplyAck:
				f.Name, f.Detail = SignalInjectionFollowed, "answered the sink with an acknowledgement (nothing leaked)"
			}
		case UseCredential:
			f.Name, f.Detail = SignalCredentialUsed, "used the planted credential"
			if t.Secret != "" {
				f.Detail = "used the planted " + t.Secret
			}
		}
		fire(f)
		if t.Use == UseCredential || t.Use == UseTool || !timed {
			// Using a secret or a tool's argument is not following a hidden link: a
			// person at a terminal does it at LLM speed too. Its delay stays on the firing.
			continue
		}
		if sig := FollowUpSignal(time.Duration(delay) * time.Millisecond); sig != "" {
			fire(Firing{Name: sig, Source: t.SourceHit, Delay: &delay})
		}
	}
	for _, p := range out.Prompts {
		fire(Firing{Name: SignalSystemPromptLeaked, Placement: "sink", Detail: "prompt " + p.Prompt.Hash[:12] + " via " + p.Source})
		if p.Prompt.Model != "" {
			s.Model = p.Prompt.Model
		}
		if p.Prompt.Operator != "" {
			s.Operator = p.Prompt.Operator
		}
	}
	if o.Tool != "" {
		fire(Firing{Name: SignalToolInvoked, Placement: "mcp_tool", Detail: o.Tool + " " + o.ToolArgs})
	}
	switch {
	case o.Disallow != nil:
		at := o.At
		s.State.RobotsAt, s.State.Disallowed, out.Changed = &at, o.Disallow, true
	case s.State.RobotsAt != nil && disallowed(s.State.Disallowed, o.Path):
		once(SignalRobotsDisallowIgnored, o.Path)
	}
	for _, p := range o.Linked {
		if len(s.State.Linked) < MaxLinked && !slices.Contains(s.State.Linked, p) {
			s.State.Linked, out.Changed = append(s.State.Linked, p), true
		}
	}
	if isProbe(o) && !slices.Contains(s.State.Linked, o.Path) && !slices.Contains(s.State.ProbePaths, o.Path) &&
		ProbeCounts(o.Path, o.UA, o.Known, s.State.Linked) {
		if forgetProbes(&s.State, o.At) {
			out.Changed = true
		}
		if len(s.State.ProbePaths) < MaxProbes {
			s.State.ProbePaths, out.Changed = append(s.State.ProbePaths, o.Path), true
			s.State.ProbeAt = append(s.State.ProbeAt, o.At.Unix())
		}
	}
	// Also on a hit that is no probe: a stranger's probes arrive with its first session hit.
	if len(s.State.ProbePaths) >= ProbingThreshold && s.State.Signals[SignalSystematicProbing] == 0 {
		if n := recentProbes(s.State, o.At); n >= ProbingThreshold {
			once(SignalSystematicProbing, fmt.Sprintf("%d unknown paths within %s", n, ProbeWindow))
		}
	}

	s.Hits++
	if o.At.After(s.Last) {
		s.Last = o.At
	}
	if o.TrapID != "" && !slices.Contains(s.Traps, o.TrapID) {
		s.Traps, out.Changed = append(s.Traps, o.TrapID), true
	}
	out.Verdict = Judge(Evidence{Signals: s.State.Signals, Agent: LookupUA(s.UA), Hits: s.Hits, Sent: s.State.Sent})
	return s, out
}

// forgetProbes drops the probes older than ProbeWindow before at, and reports whether it
// dropped any. A state stored before probe times were kept has them all counted as recent.
func forgetProbes(st *schematype.SessionState, at time.Time) bool {
	if len(st.ProbeAt) != len(st.ProbePaths) {
		st.ProbeAt = slices.Repeat([]int64{at.Unix()}, len(st.ProbePaths))
	}
	since := at.Add(-ProbeWindow).Unix()
	if !slices.ContainsFunc(st.ProbeAt, func(t int64) bool { return t < since }) {
		return false
	}
	// New arrays: the caller's session shares the old ones.
	var paths []string
	var ats []int64
	for i, t := range st.ProbeAt {
		if t >= since {
			paths, ats = append(paths, st.ProbePaths[i]), append(ats, t)
		}
	}
	st.ProbePaths, st.ProbeAt = paths, ats
	return true
}

// recentProbes counts the probes within ProbeWindow before at (all of them when the
// state has no probe times).
func recentProbes(st schematype.SessionState, at time.Time) int {
	if len(st.ProbeAt) != len(st.ProbePaths) {
		return len(st.ProbePaths)
	}
	since, n := at.Add(-ProbeWindow).Unix(), 0
	for _, t := range st.ProbeAt {
		if t >= since {
			n++
		}
	}
	return n
}

// browserAutoPaths are asked for by browsers on their own, never by a person's choice.
var browserAutoPaths = []string{"/favicon.ico", "/apple-touch-icon", "/browserconfig.xml", "/site.webmanifest", "/manifest.json", "/.well-known/"}

// isProbe reports whether an unknown path counts toward systematic probing: a link
// followed from one of our own pages (Referer on the same host) is a person browsing,
// and what browsers fetch by themselves is nobody's probe.
func isProbe(o Observation) bool {
	if o.Kind != "not_found" {
		return false
	}
	for _, p := range browserAutoPaths {
		if strings.HasPrefix(o.Path, p) {
			return false
		}
	}
	if vs := o.Headers["Referer"]; len(vs) > 0 {
		if u, err := url.Parse(vs[0]); err == nil && u.Host != "" && strings.EqualFold(u.Host, o.Host) {
			return false
		}
	}
	return true
}

func disallowed(paths []string, p string) bool {
	for _, d := range paths {
		if d != "" && strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

type promptCandidate struct {
	text, source string
	shaped       *ProviderPrompt // from a provider's system field (ProviderPrompts)
}

// minPromptCandidate is the shortest text judged as a possible prompt.
const minPromptCandidate = 20

// sinkTexts are the texts in a request sent to a sink that may be a leaked system prompt
// or a reply: the system part of a provider-shaped request, JSON string fields, form
// fields, query parameters, and the plain body; each at least minLen bytes once trimmed (a
// reply such as "OK" is shorter than any prompt). At most 16 of at least
// minPromptCandidate bytes and 16 shorter ones are kept, so short fields never crowd out
// a prompt.
func sinkTexts(o Observation, minLen int) []promptCandidate {
	var out []promptCandidate
	long, short := 0, 0
	add := func(text, source string) {
		switch n := len(strings.TrimSpace(text)); {
		case n >= minPromptCandidate && long < 16:
			long++
		case n >= minLen && n < minPromptCandidate && short < 16:
			short++
		default:
			return
		}
		out = append(out, promptCandidate{text: text, source: source})
	}
	body := strings.TrimSpace(o.Body)
	for _, pp := range ProviderPrompts(body) {
		out = append(out, promptCandidate{text: pp.Text, source: pp.Shape, shaped: &pp})
	}
	if strings.HasPrefix(body, "{") || strings.HasPrefix(body, "[") {
		for _, s := range jsonStrings(body, 16) {
			add(s, "json_field")
		}
	}
	if form, err := url.ParseQuery(body); err == nil && !strings.HasPrefix(body, "{") && strings.Contains(body, "=") {
		for _, vs := range form {
			for _, v := range vs {
				add(v, "form_field")
			}
		}
	} else if body != "" && !strings.HasPrefix(body, "{") && !strings.HasPrefix(body, "[") {
		add(body, "body")
	}
	if q, err := url.ParseQuery(o.Query); err == nil {
		for _, vs := range q {
			for _, v := range vs {
				add(v, "query")
			}
		}
	}
	return out
}

// jsonStrings collects up to max string values of a JSON document, depth first.
func jsonStrings(doc string, max int) []string {
	var v any
	if json.Unmarshal([]byte(doc), &v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		if len(out) >= max {
			return
		}
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(v[k])
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return out
}

// lureNote says, in a callback's evidence, that the link was a lure and which page of the
// site carried it.
func lureNote(t TokenUse) string {
	switch {
	case !t.Lure:
		return ""
	case t.Carrier != "":
		return ", from a lure on " + t.Carrier
	case t.SourceAt.IsZero():
		return ", from a lure snippet"
	}
	return ", from a lure on a page of the site (not known which)"
}
