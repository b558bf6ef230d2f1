package record

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBound(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 10, "abc"},
		{"abcdef", 3, "abc"},
		{"a\x00b", 10, "a\uFFFDb"},
		{"a\xffb", 10, "a\uFFFDb"},
		{"héllo", 2, "h"}, // the cut would split é
		{"héllo", 3, "hé"},
	} {
		got := Bound(c.in, c.n)
		if got != c.want || !utf8.ValidString(got) || len(got) > c.n || strings.IndexByte(got, 0) >= 0 {
			t.Errorf("Bound(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

// Multi-row statements come in few sizes (each a statement kept prepared), and cover every row once.
func TestStmtChunks(t *testing.T) {
	for _, c := range []struct {
		n, max int
		want   []int
	}{
		{0, 64, nil},
		{1, 64, []int{1}},
		{64, 64, []int{64}},
		{100, 64, []int{64, 32, 4}},
		{255, 128, []int{128, 64, 32, 16, 8, 4, 2, 1}},
		{300, 128, []int{128, 128, 32, 8, 4}},
	} {
		if got := stmtChunks(c.n, c.max); !slices.Equal(got, c.want) {
			t.Errorf("stmtChunks(%d, %d) = %v, want %v", c.n, c.max, got, c.want)
		}
	}
}
