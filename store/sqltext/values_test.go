package sqltext_test

import (
	"strings"
	"testing"

	"github.com/flytrap/flytrap/store/sqltext"
)

func TestValues(t *testing.T) {
	for _, c := range []struct {
		pg    bool
		rows  int
		casts []string
		want  string
	}{
		{false, 2, sqltext.Columns(3), "(?, ?, ?), (?, ?, ?)"},
		{true, 2, sqltext.Columns(2), "($1, $2), ($3, $4)"},
		{true, 2, []string{"", "::timestamptz"}, "($1, $2::timestamptz), ($3, $4::timestamptz)"},
		{false, 1, []string{"", "::bigint"}, "(?, ?)"},
		{true, 0, sqltext.Columns(2), ""},
	} {
		var b strings.Builder
		sqltext.Values(&b, c.pg, c.rows, c.casts...)
		if b.String() != c.want {
			t.Errorf("Values(pg=%v, %d, %q) = %q, want %q", c.pg, c.rows, c.casts, b.String(), c.want)
		}
	}
}

func TestRebind(t *testing.T) {
	q := "DELETE FROM t WHERE id IN (" + sqltext.In(3) + ") AND at < ?"
	if got, want := sqltext.Rebind(true, q), "DELETE FROM t WHERE id IN ($1, $2, $3) AND at < $4"; got != want {
		t.Errorf("Rebind(pg) = %q, want %q", got, want)
	}
	if got := sqltext.Rebind(false, q); got != "DELETE FROM t WHERE id IN (?, ?, ?) AND at < ?" {
		t.Errorf("Rebind(sqlite) = %q", got)
	}
}
