package trap

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientIP is the visitor's address: the connection's peer, or, when that peer is a
// trusted proxy, the right-most X-Forwarded-For entry no trusted proxy added.
// Attackers control the header, so it is believed only as far as our own proxies vouch.
func clientIP(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer := addrOf(r.RemoteAddr)
	if !isTrusted(peer, trusted) {
		return peer
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return peer
		}
		a = a.Unmap()
		if !isTrusted(a, trusted) {
			return a
		}
		peer = a
	}
	return peer
}

// ClientPrefix is what counts as one client in per-address limits: an IPv4 address, or
// an IPv6 address's /64 (what one host or subscriber is given: it picks any address in
// it). The API's failed-authentication limit and the legacy MCP streams share it.
func ClientPrefix(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p
	}
	return netip.PrefixFrom(a, a.BitLen())
}

func addrOf(hostport string) netip.Addr {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.IPv4Unspecified()
	}
	return a.Unmap()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
