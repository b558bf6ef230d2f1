// Package clientnet names the network a client address belongs to for per-network limits:
// what one party holds cheaply, an IPv4 /24 or an IPv6 /48 (a site's allocation). The trap
// listener's MCP streams, the signed agents' directory fetches and the crawler DNS lookups
// count by it.
package clientnet

import "net/netip"

// Of is a's network: its IPv4 /24 or IPv6 /48 (an IPv4-mapped address counts as IPv4).
func Of(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	bits := 24
	if a.Is6() {
		bits = 48
	}
	p, _ := a.Prefix(bits)
	return p
}
