package detect

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/flytrap/flytrap/detect/internal/uatok"
)

//go:generate go run ./internal/genagents -in internal/genagents/robots.json -out data/agents.json -commit 738c80d -date 2026-08-22

// Kind is what a user agent says its client is.
type Kind uint8

// Kinds of user agent. KindUnknown covers ordinary browsers and anything not
// recognised: it is the only kind that can end a session as HUMAN.
const (
	KindUnknown       Kind = iota // a browser, or nothing recognised
	KindEmpty                     // no user agent at all (or "-")
	KindAIAgent                   // acts autonomously: ChatGPT Agent, Operator, coding agents
	KindAIAssistant               // fetches for one user's prompt: ChatGPT-User, Claude-User
	KindAISearch                  // AI search indexing: OAI-SearchBot, PerplexityBot
	KindAICrawler                 // training and data collection: GPTBot, ClaudeBot, CCBot
	KindSearchCrawler             // search engines: Googlebot, bingbot
	KindAutomation                // HTTP clients, scripts, crawling frameworks, generic bots
	KindHeadless                  // headless or driven browsers
	KindScanner                   // vulnerability and internet-wide scanners
	KindLinkPreview               // chat and social apps unfurling a shared link: never AI
)

var kindNames = [...]string{
	KindUnknown:       "unknown",
	KindEmpty:         "empty",
	KindAIAgent:       "ai_agent",
	KindAIAssistant:   "ai_assistant",
	KindAISearch:      "ai_search",
	KindAICrawler:     "ai_crawler",
	KindSearchCrawler: "search_crawler",
	KindAutomation:    "automation",
	KindHeadless:      "headless",
	KindScanner:       "scanner",
	KindLinkPreview:   "link_preview",
}

// String returns the kind's lower-case name, which is also the Category of
// agents of that kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// IsAI reports whether k is one of the AI kinds from ai.robots.txt.
func (k Kind) IsAI() bool {
	return k == KindAIAgent || k == KindAIAssistant || k == KindAISearch || k == KindAICrawler
}

// tier orders kinds when a user agent names several: AI > scanner > search >
// link preview > headless > automation. An AI token is the most specific claim
// a user agent can make; scanners often embed a crawler's name to look
// harmless; previewers often name the HTTP library they are built on
// (LinkedInBot's "Apache-HttpClient").
func (k Kind) tier() int {
	switch {
	case k.IsAI():
		return 6
	case k == KindScanner:
		return 5
	case k == KindSearchCrawler:
		return 4
	case k == KindLinkPreview:
		return 3
	case k == KindHeadless:
		return 2
	case k == KindAutomation:
		return 1
	}
	return 0
}

// Agent is what LookupUA knows about a user agent. Category is Kind.String()
// (for AI agents, the normalised ai.robots.txt category). For KindUnknown,
// Name, Operator and Category are empty; Operator is also empty whenever the
// operator is not known.
type Agent struct {
	Kind     Kind
	Name     string
	Operator string
	Category string
}

// MaxUALength bounds the user agent LookupUA reads; longer ones are cut.
const MaxUALength = 1024

//go:embed data/agents.json
var agentsJSON []byte

type candidate struct {
	rest  []string // tokens that must follow the first one, for names with spaces
	agent int      // index into uaIndex.agents
	weak  bool
}

type uaIndex struct {
	agents []Agent
	first  map[string][]candidate // keyed by the name's first token
	// overridden records ai.robots.txt keys replaced by a built-in.
	overridden map[string]bool
}

// agentFile mirrors data/agents.json (written by internal/genagents).
type agentFile struct {
	Source string `json:"source"`
	Commit string `json:"commit"`
	Date   string `json:"date"`
	Agents []struct {
		Name     string `json:"name"`
		Match    string `json:"match"`
		Category string `json:"category"`
		Operator string `json:"operator"`
	} `json:"agents"`
}

var uaIdx = mustBuildIndex(agentsJSON)

func mustBuildIndex(data []byte) *uaIndex {
	idx, err := buildIndex(data)
	if err != nil {
		panic(fmt.Sprintf("detect: embedded agent data: %v", err))
	}
	return idx
}

func buildIndex(data []byte) (*uaIndex, error) {
	var f agentFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse agents.json: %w", err)
	}
	idx := &uaIndex{first: map[string][]candidate{}, overridden: map[string]bool{}}
	builtinKeys := map[string]bool{}
	add := func(a Agent, toks []string, weak bool) {
		idx.agents = append(idx.agents, a)
		idx.first[toks[0]] = append(idx.first[toks[0]], candidate{rest: toks[1:], agent: len(idx.agents) - 1, weak: weak})
	}
	for _, b := range builtinAgents {
		a := Agent{Kind: b.kind, Name: b.name, Operator: b.operator, Category: b.kind.String()}
		for _, m := range b.match {
			toks := uatok.Tokens(m)
			if len(toks) == 0 {
				return nil, fmt.Errorf("built-in %q: match %q has no tokens", b.name, m)
			}
			builtinKeys[strings.Join(toks, " ")] = true
			add(a, toks, b.weak)
		}
	}
	for _, e := range f.Agents {
		kind, ok := aiKinds[e.Category]
		if !ok {
			return nil, fmt.Errorf("agent %q: unknown category %q", e.Name, e.Category)
		}
		toks := strings.Fields(e.Match)
		if len(toks) == 0 {
			return nil, fmt.Errorf("agent %q: empty match", e.Name)
		}
		key := strings.Join(toks, " ")
		if builtinKeys[key] {
			idx.overridden[key] = true
			continue
		}
		add(Agent{Kind: kind, Name: e.Name, Operator: e.Operator, Category: e.Category}, toks, weakAINames[key])
	}
	return idx, nil
}

var aiKinds = map[string]Kind{
	"ai_agent":     KindAIAgent,
	"ai_assistant": KindAIAssistant,
	"ai_search":    KindAISearch,
	"ai_crawler":   KindAICrawler,
}

type span struct {
	start, end uint16
	slash      bool // the token is immediately followed by '/': a product token
}

var emptyAgent = Agent{Kind: KindEmpty, Category: KindEmpty.String()}

// LookupUA says what a User-Agent header claims to be. Matching is by whole
// token, case-insensitive: the header is split once on every byte outside
// [A-Za-z0-9._-] (so also on '/'), bare version numbers are dropped, and each
// token is looked up in one map; names with spaces match consecutive tokens.
// When several names match, the most specific kind wins (AI > scanner >
// search > headless > automation), then the longer name. An ordinary
// browser's user agent is KindUnknown. Input beyond MaxUALength is ignored.
// LookupUA does not allocate.
func LookupUA(ua string) Agent {
	if len(ua) > MaxUALength {
		ua = ua[:MaxUALength]
	}
	if t := strings.TrimSpace(ua); t == "" || t == "-" {
		return emptyAgent
	}
	var low [MaxUALength]byte
	var toks [MaxUALength/2 + 1]span
	n := 0
	for i := 0; i < len(ua); {
		if !uatok.IsTokenByte(ua[i]) {
			i++
			continue
		}
		j := i
		allVersion := true
		for j < len(ua) && uatok.IsTokenByte(ua[j]) {
			c := ua[j]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != '.' && (c < '0' || c > '9') {
				allVersion = false
			}
			low[j] = c
			j++
		}
		if !allVersion {
			toks[n] = span{start: uint16(i), end: uint16(j), slash: j < len(ua) && ua[j] == '/'}
			n++
		}
		i = j
	}
	if n == 0 {
		return Agent{Kind: KindUnknown}
	}

	best, bestRank := -1, -1
	generic := -1 // token index of a generic "…bot" name, used only if nothing else matched
	for k := 0; k < n; k++ {
		tok := low[toks[k].start:toks[k].end]
		cands, ok := uaIdx.first[string(tok)]
		if !ok {
			// "DirBuster-1.0-RC1", "acunetix_wvs_security_test": retry
			// with the name before a version or an underscore.
			if cut := nameCut(tok); cut > 0 {
				cands, ok = uaIdx.first[string(tok[:cut])]
			}
		}
		if !ok {
			if generic < 0 && looksLikeBot(tok) {
				generic = k
			}
			continue
		}
		for _, c := range cands {
			if k+len(c.rest) >= n {
				continue
			}
			match := true
			for r, want := range c.rest {
				s := toks[k+1+r]
				if string(low[s.start:s.end]) != want {
					match = false
					break
				}
			}
			if !match {
				continue
			}
			rank := uaIdx.agents[c.agent].Kind.tier()*10 + len(c.rest)
			if c.weak {
				// An ordinary word counts only as the product token.
				if !(toks[k].slash || k == 0) {
					continue
				}
			} else {
				rank += 1000
			}
			if rank > bestRank {
				best, bestRank = c.agent, rank
			}
		}
	}
	switch {
	case bestRank >= 1000:
		return uaIdx.agents[best]
	case generic >= 0 && (best < 0 || uaIdx.agents[best].Kind.tier() <= KindAutomation.tier()):
		s := toks[generic]
		return Agent{Kind: KindAutomation, Name: ua[s.start:s.end], Category: KindAutomation.String()}
	case best >= 0:
		return uaIdx.agents[best]
	}
	if n == 1 && string(low[toks[0].start:toks[0].end]) == "mozilla" {
		// "Mozilla/5.0" and nothing else: no browser sends that.
		return Agent{Kind: KindAutomation, Name: "Mozilla (bare)", Category: KindAutomation.String()}
	}
	if !browserShaped(ua) {
		// On no list and not what a browser sends: a client someone wrote.
		s := toks[0]
		end := min(int(s.end), int(s.start)+maxUnlistedName)
		return Agent{Kind: KindAutomation, Name: ua[s.start:end], Category: KindAutomation.String()}
	}
	return Agent{Kind: KindUnknown}
}

// maxUnlistedName bounds the name kept for a client on no list (its first token).
const maxUnlistedName = 64

// browserShaped reports whether a user agent on no list looks like a browser's:
// "Mozilla/<version> (<platform>…" — every browser, in-app browser and web view
// of the last twenty years sends that — or the old "Opera/<version> (…". Anything
// else ("MyTool/1.0", "Dalvik/2.1.0 (Linux…)", "okhttp-like/3") is automation.
func browserShaped(ua string) bool {
	ua = strings.TrimSpace(ua)
	for _, p := range [...]string{"Mozilla/", "Opera/"} {
		if len(ua) < len(p) || !strings.EqualFold(ua[:len(p)], p) {
			continue
		}
		rest := ua[len(p):]
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		if i == 0 {
			return false
		}
		rest = strings.TrimLeft(rest[i:], " ")
		return strings.HasPrefix(rest, "(") && strings.Contains(rest, ")")
	}
	return false
}

// nameCut returns where a name ends inside a token that carries a version or
// a suffix ("dirbuster-1.0-rc1" → 9, "acunetix_wvs" → 8), or 0.
func nameCut(tok []byte) int {
	for j := 1; j < len(tok)-1; j++ {
		if tok[j] == '_' || tok[j] == '-' && tok[j+1] >= '0' && tok[j+1] <= '9' {
			return j
		}
	}
	return 0
}

// looksLikeBot is the last-resort rule for self-declared robots that are on
// no list (AhrefsBot, MJ12bot, DotBot, "ExampleCrawler"): a lower-cased token
// ending in "bot" or containing "spider" or "crawler".
func looksLikeBot(tok []byte) bool {
	if len(tok) < 5 || genericBotExclusions[string(tok)] {
		return false
	}
	return bytes.HasSuffix(tok, []byte("bot")) || bytes.Contains(tok, []byte("spider")) || bytes.Contains(tok, []byte("crawler"))
}
