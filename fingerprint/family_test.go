package fingerprint

import (
	"testing"

	"github.com/flytrap/flytrap/detect"
)

func TestFamily(t *testing.T) {
	for _, tt := range []struct{ ja4, h2, order, want string }{
		{"t13d1517h2_8daaf6152771_cb7bf5808d99", "1:65536;2:0;4:6291456;6:262144|15663105|0|m,a,s,p", "h213_63e7874454b1", Chromium},
		{"t13d3112h2_e8f1e7e78f70_b26ce05bbdd6", "3:100;4:33554432;2:0|33488897|0|m,p,s,a", "", Curl},
		{"t13d1812h1_85036bcba153_b26ce05bbdd6", "", "h105_0e0009a49490", Python},
		{"", "", "h105_0e0009a49490", Python}, // plain HTTP: the header order alone
		{"t13d1312h2_f57a46bbacb6_ab7e3b40a677", "2:0;4:4194304;5:16384;6:10485760|1073741824|0|a,m,p,s", "", Go},
		// Chrome's ClientHello over Go's HTTP/2 (uTLS): the library's stack wins.
		{"t13d1516h2_8daaf6152771_02713d6af862", "2:0;4:4194304;5:16384;6:10485760|1073741824|0|m,a,s,p", "", Go},
		{"t13d1516h2_000000000000_02713d6af862", "", "", ""},
		{"", "1:1|", "", ""},
		{"garbage", "||||", "x", ""},
	} {
		if got := Family(tt.ja4, tt.h2, tt.order); got != tt.want {
			t.Errorf("Family(%q, %q, %q) = %q, want %q", tt.ja4, tt.h2, tt.order, got, tt.want)
		}
	}
	// The browsers here are detect's: a claim is compared with the same names.
	for _, s := range Stacks {
		if IsBrowser(s.Family) != detect.BrowserStacks[s.Family] {
			t.Errorf("%s: a browser here %v, in detect %v", s.Family, IsBrowser(s.Family), detect.BrowserStacks[s.Family])
		}
	}
}

func BenchmarkFamily(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Family("t13d1516h2_8daaf6152771_02713d6af862", "1:65536;2:0;4:6291456;6:262144|15663105|0|m,a,s,p", "h213_63e7874454b1")
	}
}
