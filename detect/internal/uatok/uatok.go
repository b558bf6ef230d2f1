// Package uatok holds the one user-agent tokenisation rule shared by the
// detector and its data generator, so that names in data/agents.json are
// split exactly as the user agents they are matched against.
package uatok

import "strings"

// IsTokenByte reports whether c belongs inside a token: [A-Za-z0-9._-].
// Everything else — space, '/', ';', '(', '+', '@', any non-ASCII byte —
// separates tokens.
func IsTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// IsVersion reports whether a token is only a version number (digits and
// dots), which never names a product and is skipped when matching.
func IsVersion(tok string) bool {
	if tok == "" {
		return false
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c != '.' && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// Tokens splits s into lower-case tokens, dropping bare version numbers.
// It allocates and is meant for building tables, not for the hot path.
func Tokens(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		if !IsTokenByte(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && IsTokenByte(s[j]) {
			j++
		}
		if tok := strings.ToLower(s[i:j]); !IsVersion(tok) {
			out = append(out, tok)
		}
		i = j
	}
	return out
}
