package main

import (
	"os"
	"path/filepath"
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
