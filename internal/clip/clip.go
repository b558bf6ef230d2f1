// Package clip cuts text to a byte budget without splitting a UTF-8 character: the one
// place error messages, logs, webhook alerts and recorded attacker text are shortened.
package clip

import "unicode/utf8"

// Ellipsis marks a cut in Mark and Fit.
const Ellipsis = "…"

// boundary is the largest i <= n (and >= 0) at which s can be cut without splitting a
// character; n must be below len(s). A byte that is not a character's first byte (a
// continuation byte, even a stray one) is never cut before.
func boundary(s string, n int) int {
	if n < 0 {
		return 0
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// Bytes returns s cut to at most n bytes on a character boundary, unmarked.
func Bytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:boundary(s, n)]
}

// Mark returns s, or its first n bytes at most (on a character boundary) followed by
// Ellipsis: the mark comes on top of n, so a cut text keeps n bytes of the original.
func Mark(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:boundary(s, n)] + Ellipsis
}

// Fit returns s, or s cut so that it and Ellipsis take at most n bytes together: for
// fields with a hard size limit. Below len(Ellipsis) bytes there is no room for the
// mark, and s is cut unmarked.
func Fit(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < len(Ellipsis) {
		return Bytes(s, n)
	}
	return s[:boundary(s, n-len(Ellipsis))] + Ellipsis
}
