package event

import (
	"slices"
	"strings"
)

// Matches reports whether a type filter takes events of type typ: an empty filter and "*"
// take every type, "prefix.*" every type under the prefix (threat.* takes threat.detected
// and threat.escalated), any other entry that type only. Webhook endpoints' filters and the
// events list, stream and subscription all read filters with it.
func Matches(filter []string, typ string) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if f == "*" || f == typ {
			return true
		}
		if p, ok := strings.CutSuffix(f, ".*"); ok && strings.HasPrefix(typ, p+".") {
			return true
		}
	}
	return false
}

// ValidFilter reports whether f is an entry a type filter may hold: an event type, "*", or
// a "prefix.*" that takes at least one event type.
func ValidFilter(f string) bool {
	if f == "*" || slices.Contains(Types, f) {
		return true
	}
	if _, ok := strings.CutSuffix(f, ".*"); ok {
		return slices.ContainsFunc(Types, func(t string) bool { return Matches([]string{f}, t) })
	}
	return false
}

// Expand turns a type filter into the event types it takes, in Types' order; nil when it
// takes every type (an empty filter, or "*"). Its entries must be ValidFilter's.
func Expand(filter []string) []string {
	if len(filter) == 0 || slices.Contains(filter, "*") {
		return nil
	}
	var out []string
	for _, t := range Types {
		if Matches(filter, t) {
			out = append(out, t)
		}
	}
	if len(out) == len(Types) {
		return nil
	}
	return out
}
