package settings

import (
	"fmt"
	"net/netip"
	"strings"
)

// SplitList reads a comma-separated list setting: items trimmed, empty ones dropped.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ParsePrefixes reads a comma-separated list of CIDRs; a bare address is its own /32 or /128.
func ParsePrefixes(v string) ([]netip.Prefix, error) {
	var ps []netip.Prefix
	for _, p := range SplitList(v) {
		pfx, err := netip.ParsePrefix(p)
		if err != nil {
			a, aerr := netip.ParseAddr(p)
			if aerr != nil {
				return nil, fmt.Errorf("%q is not a CIDR", p)
			}
			pfx = netip.PrefixFrom(a, a.BitLen())
		}
		ps = append(ps, pfx.Masked())
	}
	return ps, nil
}
