// Package ids makes the service's identifiers: a type prefix and a ULID
// (48-bit millisecond time + 80 bits of entropy), lower-cased, so ids sort by
// creation time and say what they name (trp_…, ses_…).
package ids

import (
	"strings"

	"github.com/oklog/ulid/v2"
)

// Prefixes of every identifier the service hands out.
const (
	Org      = "org"
	Site     = "site"
	Trap     = "trp"
	Session  = "ses"
	Hit      = "hit"
	Event    = "evt"
	APIKey   = "key"
	Signal   = "sig"
	Prompt   = "prm"
	Webhook  = "whk"
	Delivery = "dlv"
)

// New returns a fresh identifier with the given prefix.
func New(prefix string) string {
	// Make is monotonic within a millisecond, so ids made one after another sort in
	// that order; ids are names, never secrets (those come from crypto/rand directly).
	// One allocation (the string's): ULID text is Crockford base32, digits and upper-case
	// letters, lower-cased on the stack.
	var t [ulid.EncodedSize]byte
	u := ulid.Make()
	_ = u.MarshalTextTo(t[:]) // fails only on a short buffer
	for i, c := range t {
		if 'A' <= c && c <= 'Z' {
			t[i] = c + 'a' - 'A'
		}
	}
	var b strings.Builder
	b.Grow(len(prefix) + 1 + len(t))
	b.WriteString(prefix)
	b.WriteByte('_')
	b.Write(t[:])
	return b.String()
}

// NewFunc returns a generator for prefix, for ent's DefaultFunc.
func NewFunc(prefix string) func() string {
	return func() string { return New(prefix) }
}

// Prefix returns the type prefix of id ("trp" for "trp_01h…"), or "" if id is malformed.
func Prefix(id string) string {
	if !Valid(id) {
		return ""
	}
	p, _, _ := strings.Cut(id, "_")
	return p
}

// Valid reports whether id is a well-formed identifier of any known type.
func Valid(id string) bool {
	p, rest, ok := strings.Cut(id, "_")
	if !ok || len(rest) != ulid.EncodedSize {
		return false
	}
	switch p {
	case Org, Site, Trap, Session, Hit, Event, APIKey, Signal, Prompt, Webhook, Delivery:
	default:
		return false
	}
	_, err := ulid.ParseStrict(strings.ToUpper(rest))
	return err == nil
}

// Parse returns the ULID of an id with the given prefix ("hit_01…" for Hit), and whether
// id is one.
func Parse(id, prefix string) (ulid.ULID, bool) {
	rest, ok := strings.CutPrefix(id, prefix+"_")
	if !ok || len(rest) != ulid.EncodedSize {
		return ulid.ULID{}, false
	}
	u, err := ulid.ParseStrict(strings.ToUpper(rest))
	return u, err == nil
}

// Format is the id of prefix and u, as New writes it.
func Format(prefix string, u ulid.ULID) string { return prefix + "_" + strings.ToLower(u.String()) }
