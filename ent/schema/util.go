package schema

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"entgo.io/contrib/entgql"
	"github.com/vektah/gqlparser/v2/ast"
)

// pageLimits marks a connection field for the server's page-size limits (schema.graphqls),
// which run for the fields that carry it rather than for every field of every row.
var pageLimits = entgql.NewDirective("pageLimits")

// BytesPerCost is the stored text one unit of GraphQL complexity pays for: a text field that
// visitors fill costs its bound over this (docs/security.md, "Filters and response bytes"), so
// an operation within the complexity limit returns at most limit × BytesPerCost of such text.
const BytesPerCost = 256

// bytesCost prices a text field by the bytes it can hold.
func bytesCost(maxBytes int) entgql.Annotation {
	return entgql.Directives(entgql.NewDirective("cost",
		&ast.Argument{Name: "weight", Value: &ast.Value{Kind: ast.IntValue, Raw: strconv.Itoa(maxBytes / BytesPerCost)}}))
}

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

// oneLine refuses what cleanText does and any control character: text shown on one line
// to visitors (a trap's public title).
func oneLine(s string) error {
	if err := cleanText(s); err != nil {
		return err
	}
	for _, c := range s {
		if unicode.IsControl(c) || c == '\u2028' || c == '\u2029' {
			return errors.New("must be one line without control characters")
		}
	}
	return nil
}
