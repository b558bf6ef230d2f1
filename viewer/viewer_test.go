package viewer

import (
	"bytes"
	"testing"
)

func TestScopes(t *testing.T) {
	for in, want := range map[string]Scope{"read-only": ReadOnly, "READ_WRITE": ReadWrite, " admin ": Admin, "Read-Write": ReadWrite} {
		if got, err := ParseScope(in); err != nil || got != want {
			t.Errorf("ParseScope(%q) = %q, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "root", "read", "READ ONLY"} {
		if _, err := ParseScope(bad); err == nil {
			t.Errorf("ParseScope(%q) succeeded", bad)
		}
	}
	cases := []struct {
		have, need Scope
		ok         bool
	}{
		{Admin, ReadOnly, true}, {Admin, Admin, true}, {ReadWrite, ReadOnly, true},
		{ReadWrite, Admin, false}, {ReadOnly, ReadWrite, false}, {Scope("bogus"), ReadOnly, false},
	}
	for _, c := range cases {
		if c.have.Includes(c.need) != c.ok {
			t.Errorf("%s.Includes(%s) != %v", c.have, c.need, c.ok)
		}
	}
	if ReadOnly.Human() != "read-only" || Admin.Human() != "admin" {
		t.Error("Human spellings")
	}
	var b bytes.Buffer
	ReadWrite.MarshalGQL(&b)
	var s Scope
	if b.String() != `"READ_WRITE"` || s.UnmarshalGQL("ADMIN") != nil || s != Admin || s.UnmarshalGQL("admin") == nil || s.UnmarshalGQL(5) == nil {
		t.Error("GraphQL enum round trip")
	}
}
