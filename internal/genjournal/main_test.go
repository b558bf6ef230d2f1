package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Fields may be added at the end of a type; removing, renaming, moving or retyping one that
// records were written with is refused, with what to do.
func TestAppendOnly(t *testing.T) {
	old := []field{{"Observation", "At", "time.Time"}, {"Observation", "Method", "string"}, {"TokenUse", "Use", "detect.Use"}}
	ok := append(old[:2:2], field{"Observation", "JA4", "string"}, old[2], field{"TokenUse", "More", "bool"})
	if err := appendOnly(old, ok); err != nil {
		t.Fatalf("fields added at the end: %v", err)
	}
	for name, cur := range map[string][]field{
		"removed": {old[0], old[2]},
		"renamed": {old[0], {"Observation", "Verb", "string"}, old[2]},
		"moved":   {{"Observation", "New", "string"}, old[0], old[1], old[2]},
		"retyped": {old[0], {"Observation", "Method", "[]string"}, old[2]},
	} {
		err := appendOnly(old, cur)
		if err == nil || !strings.Contains(err.Error(), "only be added at the end") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The generated codec and the layout file match the types as they are: what go generate
// writes is what is committed (CI's generate check says so too, for the whole module).
func TestGeneratedIsCurrent(t *testing.T) {
	dir := t.TempDir()
	layout, err := os.ReadFile("../../trap/journallayout.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "layout.txt"), layout, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(filepath.Join(dir, "gen.go"), filepath.Join(dir, "layout.txt")); err != nil {
		t.Fatal(err)
	}
	for got, want := range map[string]string{"gen.go": "../../trap/journalcodec_gen.go", "layout.txt": "../../trap/journallayout.txt"} {
		a, _ := os.ReadFile(filepath.Join(dir, got))
		b, _ := os.ReadFile(want)
		if string(a) != string(b) {
			t.Errorf("%s is not what genjournal writes: run go generate ./...", want)
		}
	}
}

// Types keep their index in the record's field counts: the known ones in the layout's
// order, a new one after them wherever it is found; a type no field holds any more, whose
// records could wait in a journal, stops the generation.
func TestOrder(t *testing.T) {
	type A struct{ X int }
	type B struct{ Y string }
	type C struct{ Z bool }
	old := []field{{"A", "X", "int"}, {"C", "Z", "bool"}}
	ta, tb, tc := reflect.TypeFor[A](), reflect.TypeFor[B](), reflect.TypeFor[C]()
	cs, err := order([]reflect.Type{ta, tb, tc}, old)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, " "); got != "A C B" {
		t.Fatalf("order %q, want A C B", got)
	}
	if _, err := order([]reflect.Type{ta, tb}, old); err == nil || !strings.Contains(err.Error(), "no journaled field holds") {
		t.Fatalf("a type dropped: %v", err)
	}
}
