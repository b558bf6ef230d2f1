package schema

import (
	"errors"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"entgo.io/contrib/entgql"
)

// pageLimits marks a connection field for the server's page-size limits (schema.graphqls),
// which run for the fields that carry it rather than for every field of every row.
var pageLimits = entgql.NewDirective("pageLimits")

// nowUTC is the time stamps are taken at: UTC, milliseconds, the precision the API shows and
// both databases keep, so what a create answers is what a later read returns.
func nowUTC() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// hostnamePattern accepts a DNS hostname (letters, digits, hyphens, dots), optionally with a port.
var hostnamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:[0-9]{1,5})?$`)

// maxEcho bounds the caller's text an error message repeats: the value is the caller's
// own, but a message must not grow with the body.
const maxEcho = 64

// clip shortens s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// cleanText refuses text no database can store as text (a NUL byte, invalid UTF-8).
func cleanText(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("must be valid UTF-8")
	}
	if strings.ContainsRune(s, 0) {
		return errors.New("must not contain NUL characters")
	}
	return nil
}
