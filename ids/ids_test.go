package ids

import (
	"slices"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"
)

func TestNewIsValidPrefixedAndSortable(t *testing.T) {
	var got []string
	for range 1000 {
		id := New(Trap)
		if !Valid(id) || Prefix(id) != Trap || !strings.HasPrefix(id, "trp_") || strings.ToLower(id) != id {
			t.Fatalf("bad id %q", id)
		}
		got = append(got, id)
	}
	if !slices.IsSorted(got) {
		t.Fatal("ids made one after another do not sort in creation order")
	}
	if len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Fatal("duplicate ids")
	}
}

func TestValid(t *testing.T) {
	good := New(Session)
	for _, bad := range []string{"", "ses_", "ses", good[:len(good)-1], good + "0", "xyz_" + good[4:], strings.ToUpper(good[:4]) + good[4:] + "!", "ses_" + strings.Repeat("z", 26)} {
		if Valid(bad) || Prefix(bad) != "" {
			t.Errorf("Valid(%q) = true", bad)
		}
	}
}

func FuzzPrefix(f *testing.F) {
	f.Add(New(Org))
	f.Add("trp_\x00")
	f.Fuzz(func(t *testing.T, s string) {
		if p := Prefix(s); p != "" && !strings.HasPrefix(s, p+"_") {
			t.Fatalf("Prefix(%q) = %q", s, p)
		}
	})
}

// An id is its prefix, '_' and its ULID's text lower-cased, made in one allocation besides ulid.Make's own (ids are
// made on every hit: docs/benchmarks.md, "CPU per hit").
func TestNewIsTheLowerCasedULID(t *testing.T) {
	for range 100 {
		id := New(Hit)
		u, err := ulid.ParseStrict(strings.ToUpper(strings.TrimPrefix(id, "hit_")))
		if err != nil || id != "hit_"+strings.ToLower(u.String()) {
			t.Fatalf("%q: %v", id, err)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = New(Session) }); n > 2 {
		t.Fatalf("New allocates %v times, want 2 (the id, and the ULID ulid.Make lets escape)", n)
	}
}

func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = New(Hit)
	}
}
