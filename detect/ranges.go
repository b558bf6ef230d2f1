package detect

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"
)

//go:embed data/crawler-ranges.json
var crawlerRangesJSON []byte

// RangeList is one operator's published list of a crawler's addresses, as the engine
// uses it: the embedded snapshot, or a copy fetched from the operator (crawler.Refresher).
type RangeList struct {
	Name     string   // the list's key, e.g. "googlebot", "gptbot"
	Operator string   // who publishes it, e.g. "Google"
	Agents   []string // the Agent.Name values it vouches for
	Prefixes []netip.Prefix
	AsOf     time.Time // the list's own date (its creationTime), or the snapshot's
	Fetched  bool      // fetched from the operator, not the embedded copy
}

// RangeSet is the published ranges in effect, by agent name. It never changes once made:
// a refresh makes a new one and swaps it in (SetRanges).
type RangeSet struct {
	byAgent map[string]*RangeList // lower-cased Agent.Name
	lists   []*RangeList
}

// NewRangeSet indexes lists by their agents; a later list replaces an earlier one for
// the agents they share (the embedded lists first, then the fetched ones).
func NewRangeSet(lists []RangeList) *RangeSet {
	s := &RangeSet{byAgent: map[string]*RangeList{}}
	for i := range lists {
		l := lists[i]
		l.Prefixes = append([]netip.Prefix(nil), l.Prefixes...)
		s.lists = append(s.lists, &l)
		for _, n := range l.Agents {
			s.byAgent[strings.ToLower(n)] = &l
		}
	}
	return s
}

// Lists returns the lists that vouch for at least one agent, in the order given.
func (s *RangeSet) Lists() []RangeList {
	var out []RangeList
	for _, l := range s.lists {
		for _, n := range l.Agents {
			if s.byAgent[strings.ToLower(n)] == l {
				out = append(out, *l)
				break
			}
		}
	}
	return out
}

// embeddedLists is the snapshot in data/crawler-ranges.json (SOURCE.md).
var embeddedLists = mustParseRanges(crawlerRangesJSON)

// ranges is the set in effect: the embedded one until a refresh swaps another in. It is
// the package's one piece of changing state, read without a lock on every request.
var ranges atomic.Pointer[RangeSet]

func init() { ranges.Store(NewRangeSet(embeddedLists)) }

// EmbeddedRanges returns the lists compiled into the binary, with their snapshot dates.
func EmbeddedRanges() []RangeList { return append([]RangeList(nil), embeddedLists...) }

// SetRanges makes s the ranges UnverifiedClaim and CheckClaim use, atomically; nil
// restores the embedded ones.
func SetRanges(s *RangeSet) {
	if s == nil {
		s = NewRangeSet(embeddedLists)
	}
	ranges.Store(s)
}

// Ranges returns the set in effect.
func Ranges() *RangeSet { return ranges.Load() }

func mustParseRanges(data []byte) []RangeList {
	l, err := parseRanges(data)
	if err != nil {
		panic(fmt.Sprintf("detect: embedded crawler ranges: %v", err))
	}
	return l
}

func parseRanges(data []byte) ([]RangeList, error) {
	var f struct {
		Crawlers []struct {
			Names    []string `json:"names"`
			Operator string   `json:"operator"`
			AsOf     string   `json:"as_of"`
			Prefixes []string `json:"prefixes"`
		} `json:"crawlers"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse crawler-ranges.json: %w", err)
	}
	var out []RangeList
	for _, c := range f.Crawlers {
		if len(c.Names) == 0 || len(c.Prefixes) == 0 {
			return nil, fmt.Errorf("crawler entry %v without names or prefixes", c.Names)
		}
		asOf, err := time.Parse(time.DateOnly, c.AsOf)
		if err != nil {
			return nil, fmt.Errorf("crawler %v: as_of: %w", c.Names, err)
		}
		l := RangeList{Name: strings.ToLower(c.Names[0]), Operator: c.Operator, Agents: c.Names, AsOf: asOf}
		for _, s := range c.Prefixes {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("crawler %v: %w", c.Names, err)
			}
			l.Prefixes = append(l.Prefixes, p.Masked())
		}
		out = append(out, l)
	}
	return out, nil
}

// Verifiable reports whether a's identity can be checked against published
// address ranges, i.e. whether UnverifiedClaim can ever be true for it.
func Verifiable(a Agent) bool {
	return rangesFor(a.Name) != nil
}

// lowerKey lower-cases name into buf without allocating; "" when it does not fit.
func lowerKey(buf *[64]byte, name string) []byte {
	if name == "" || len(name) > len(buf) {
		return nil
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return buf[:len(name)]
}

// rangesFor looks name up case-insensitively without allocating.
func rangesFor(name string) *RangeList {
	var buf [64]byte
	k := lowerKey(&buf, name)
	if k == nil {
		return nil
	}
	return ranges.Load().byAgent[string(k)]
}

// backsNothing reports an address that can never back a crawler's claim: loopback,
// private, link-local, multicast, unspecified or invalid.
func backsNothing(addr netip.Addr) bool {
	return !addr.IsValid() || addr.IsLoopback() || addr.IsPrivate() || addr.IsUnspecified() ||
		addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast() || addr.IsMulticast()
}

// inRanges is the prefix of l holding addr, if any.
func inRanges(l *RangeList, addr netip.Addr) (netip.Prefix, bool) {
	addr = addr.WithZone("")
	for _, p := range l.Prefixes {
		if p.Contains(addr) {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// UnverifiedClaim reports whether a user agent claims a crawler whose
// operator publishes its address ranges (Googlebot, bingbot, Applebot,
// DuckDuckBot, GPTBot, OAI-SearchBot, PerplexityBot, and whatever the lists
// in effect name) while addr lies outside them. Loopback, private, link-local and invalid addresses never back a
// claim. Agents whose operator publishes no ranges (ClaudeBot, most others)
// are never unverified claims by ranges: CheckClaim adds reverse DNS.
func UnverifiedClaim(a Agent, addr netip.Addr) bool {
	l := rangesFor(a.Name)
	if l == nil {
		return false
	}
	addr = addr.Unmap()
	if backsNothing(addr) {
		return true
	}
	_, ok := inRanges(l, addr)
	return !ok
}
