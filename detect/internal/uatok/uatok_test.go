package uatok

import (
	"slices"
	"testing"
)

func TestTokens(t *testing.T) {
	cases := map[string][]string{
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)": {"mozilla", "compatible", "googlebot", "http", "www.google.com", "bot.html"},
		"Brightbot 1.0":     {"brightbot"},
		"iaskspider/2.0":    {"iaskspider"},
		"Factset_spyderbot": {"factset_spyderbot"},
		"Yahoo! Slurp":      {"yahoo", "slurp"},
		"DirBuster-1.0-RC1": {"dirbuster-1.0-rc1"},
		"  ":                nil,
		"\xffGPTBot\x00":    {"gptbot"},
		"Java/1.8.0_151":    {"java", "1.8.0_151"},
	}
	for in, want := range cases {
		if got := Tokens(in); !slices.Equal(got, want) {
			t.Errorf("Tokens(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsVersion(t *testing.T) {
	for s, want := range map[string]bool{"1.0": true, "2": true, "537.36": true, "": false, "v1": false, "1_2": false, "rc1": false} {
		if IsVersion(s) != want {
			t.Errorf("IsVersion(%q) = %v", s, !want)
		}
	}
}
