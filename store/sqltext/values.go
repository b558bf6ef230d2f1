// Package sqltext writes the SQL text our own statements share; it imports nothing of ours,
// so the store, the counters and the writer can all use it.
package sqltext

import (
	"strconv"
	"strings"
)

// Values writes the row lists of a multi-row statement, "(?, ?), (?, ?)" on SQLite and
// "($1, $2), ($3, $4)" on PostgreSQL (pg), rows rows of len(casts) columns; a non-empty
// cast follows its column's placeholder on PostgreSQL ("::timestamptz"), where a VALUES
// list outside an INSERT has no column types to infer its parameters' from.
func Values(b *strings.Builder, pg bool, rows int, casts ...string) {
	p := 0
	for r := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for i, cast := range casts {
			if i > 0 {
				b.WriteString(", ")
			}
			if !pg {
				b.WriteByte('?')
				continue
			}
			p++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(p))
			b.WriteString(cast)
		}
		b.WriteByte(')')
	}
}

// Columns is n columns without casts, for Values.
func Columns(n int) []string { return make([]string, n) }

// Rebind numbers a statement's ? placeholders for PostgreSQL ($1, $2…), pg; on SQLite it
// returns q as it is. q holds no ? but its placeholders.
func Rebind(pg bool, q string) string {
	if !pg {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// In is n placeholders for an IN list, "?, ?, ?" (Rebind numbers them).
func In(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }
