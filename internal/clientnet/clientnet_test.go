package clientnet

import (
	"net/netip"
	"testing"
)

func TestOf(t *testing.T) {
	for in, want := range map[string]string{
		"198.51.100.7":        "198.51.100.0/24",
		"::ffff:198.51.100.7": "198.51.100.0/24",
		"2001:db8:1:2:3::4":   "2001:db8:1::/48",
		"2001:db8:1:ffff::ab": "2001:db8:1::/48",
	} {
		if got := Of(netip.MustParseAddr(in)); got.String() != want {
			t.Errorf("Of(%s) = %s, want %s", in, got, want)
		}
	}
	if Of(netip.Addr{}).IsValid() {
		t.Error("the zero address has a network")
	}
}
