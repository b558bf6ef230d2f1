package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	for _, c := range []struct {
		in               string
		n                int
		bytes, mark, fit string
	}{
		{"", 0, "", "", ""},
		{"abc", 3, "abc", "abc", "abc"},
		{"abcdef", 4, "abcd", "abcd…", "a…"},
		{"abcdef", 0, "", "…", ""},
		{"abcdef", 2, "ab", "ab…", "ab"}, // no room for the mark
		{"abcdef", -1, "", "…", ""},
		{"héllo", 2, "h", "h…", "h"}, // the cut would split é (c3 a9)
		{"héllo", 3, "hé", "hé…", "…"},
		{"héllo", 5, "héll", "héll…", "h…"},
		{"日本語", 4, "日", "日…", "…"}, // three bytes each
		{"日本語", 7, "日本", "日本…", "日…"},
		{"a😀b", 4, "a", "a…", "a…"}, // four bytes
		{"a😀b", 5, "a😀", "a😀…", "a…"},
		{"ab\x80\x80cd", 3, "a", "a…", "…"}, // nor before a stray continuation byte
	} {
		if got := Bytes(c.in, c.n); got != c.bytes {
			t.Errorf("Bytes(%q, %d) = %q, want %q", c.in, c.n, got, c.bytes)
		}
		if got := Mark(c.in, c.n); got != c.mark {
			t.Errorf("Mark(%q, %d) = %q, want %q", c.in, c.n, got, c.mark)
		}
		if got := Fit(c.in, c.n); got != c.fit {
			t.Errorf("Fit(%q, %d) = %q, want %q", c.in, c.n, got, c.fit)
		}
	}
}

// FuzzClip: whatever the text and the budget, no function splits a character of valid
// text, each keeps to its byte bound, and what is kept is a prefix of the text.
func FuzzClip(f *testing.F) {
	for _, s := range []string{"", "abc", "héllo", "日本語", "a😀b", "\xff\xfe", "ab\x80cd", strings.Repeat("é", 40)} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n %= 4 * (len(s) + 4) // budgets around the text's length, not just huge ones
		kept := max(n, 0)
		for name, c := range map[string]struct {
			got   string
			bound int    // the most bytes the result may have
			mark  string // what a cut adds
		}{
			"Bytes": {Bytes(s, n), kept, ""},
			"Mark":  {Mark(s, n), kept + len(Ellipsis), Ellipsis},
			"Fit":   {Fit(s, n), max(kept, 0), Ellipsis},
		} {
			if len(s) <= n {
				if c.got != s {
					t.Fatalf("%s(%q, %d) = %q, want it unchanged", name, s, n, c.got)
				}
				continue
			}
			if len(c.got) > c.bound {
				t.Fatalf("%s(%q, %d) = %q: %d bytes, more than %d", name, s, n, c.got, len(c.got), c.bound)
			}
			prefix, marked := strings.CutSuffix(c.got, c.mark)
			if c.mark != "" && !marked && !(name == "Fit" && n < len(Ellipsis)) {
				t.Fatalf("%s(%q, %d) = %q: a cut without the mark", name, s, n, c.got)
			}
			if !strings.HasPrefix(s, prefix) {
				t.Fatalf("%s(%q, %d) = %q: not a prefix of the text", name, s, n, c.got)
			}
			if utf8.ValidString(s) && !utf8.ValidString(c.got) {
				t.Fatalf("%s(%q, %d) = %q: split a character", name, s, n, c.got)
			}
			if len(prefix) > 0 && len(prefix) < len(s) && !utf8.RuneStart(s[len(prefix)]) {
				t.Fatalf("%s(%q, %d) = %q: cut inside a character", name, s, n, c.got)
			}
		}
	})
}
