package detect

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
)

//go:embed data/crawler-ranges.json
var crawlerRangesJSON []byte

// crawlerRanges maps a lower-cased Agent.Name to the prefixes its operator
// publishes. Only names listed here can be unverified claims.
var crawlerRanges = mustParseRanges(crawlerRangesJSON)

func mustParseRanges(data []byte) map[string][]netip.Prefix {
	m, err := parseRanges(data)
	if err != nil {
		panic(fmt.Sprintf("detect: embedded crawler ranges: %v", err))
	}
	return m
}

func parseRanges(data []byte) (map[string][]netip.Prefix, error) {
	var f struct {
		Crawlers []struct {
			Names    []string `json:"names"`
			Prefixes []string `json:"prefixes"`
		} `json:"crawlers"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse crawler-ranges.json: %w", err)
	}
	m := map[string][]netip.Prefix{}
	for _, c := range f.Crawlers {
		if len(c.Names) == 0 || len(c.Prefixes) == 0 {
			return nil, fmt.Errorf("crawler entry %v without names or prefixes", c.Names)
		}
		ps := make([]netip.Prefix, 0, len(c.Prefixes))
		for _, s := range c.Prefixes {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("crawler %v: %w", c.Names, err)
			}
			ps = append(ps, p.Masked())
		}
		for _, n := range c.Names {
			m[strings.ToLower(n)] = append(m[strings.ToLower(n)], ps...)
		}
	}
	return m, nil
}

// Verifiable reports whether a's identity can be checked against published
// address ranges, i.e. whether UnverifiedClaim can ever be true for it.
func Verifiable(a Agent) bool {
	_, ok := rangesFor(a.Name)
	return ok
}

// rangesFor looks name up case-insensitively without allocating.
func rangesFor(name string) ([]netip.Prefix, bool) {
	var buf [64]byte
	if name == "" || len(name) > len(buf) {
		return nil, false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	p, ok := crawlerRanges[string(buf[:len(name)])]
	return p, ok
}

// UnverifiedClaim reports whether a user agent claims a crawler whose
// operator publishes its address ranges (Googlebot, bingbot, Applebot,
// DuckDuckBot, GPTBot, OAI-SearchBot, PerplexityBot) while addr lies outside
// them. Loopback, private, link-local and invalid addresses never back a
// claim. Agents whose operator publishes no ranges (ClaudeBot, most others)
// are never unverified claims: there is nothing to check them against.
func UnverifiedClaim(a Agent, addr netip.Addr) bool {
	prefixes, ok := rangesFor(a.Name)
	if !ok {
		return false
	}
	addr = addr.Unmap()
	if !addr.IsValid() || addr.IsLoopback() || addr.IsPrivate() || addr.IsUnspecified() ||
		addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast() || addr.IsMulticast() {
		return true
	}
	addr = addr.WithZone("")
	for _, p := range prefixes {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}
