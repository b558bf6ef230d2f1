package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flytrap/flytrap/decoy"
)

// A new kind and a new class reach every generated list, the OpenAPI document's enums
// (upper and lower case) included, and the document stays as laid out.
func TestRunWritesEveryList(t *testing.T) {
	root := t.TempDir()
	for _, dir := range []string{"ent/schema", "rest", "web/src"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	doc, err := os.ReadFile("../../rest/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "rest/openapi.json"), doc, 0o644); err != nil {
		t.Fatal(err)
	}
	kinds := append(decoy.Names(), "sitemap") // the registered kinds (the document's own) and a new one
	classes := []string{"HUMAN", "BOT", "CRAWLER", "AI_CRAWLER", "AI_ASSISTANT", "AI_AGENT", "AI_AGENT_MALICIOUS", "SCANNER", "LINK_PREVIEW"}
	if err := run(root, kinds, classes); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(root, "rest/openapi.json"))
	for _, want := range []string{`"sitemap"`, `"LINK_PREVIEW"`, `"link_preview"`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("openapi.json lacks %s", want)
		}
	}
	if strings.Count(string(got), "\n") != strings.Count(string(doc), "\n")+strings.Count(string(got), `"sitemap"`)+strings.Count(string(got), `"LINK_PREVIEW"`)+strings.Count(string(got), `"link_preview"`) {
		t.Error("the rewrite changed more than the enums' lines")
	}
	schema, _ := os.ReadFile(filepath.Join(root, "ent/schema/vocab_gen.go"))
	if !strings.Contains(string(schema), `"sitemap"`) || !strings.Contains(string(schema), `"LINK_PREVIEW"`) {
		t.Errorf("vocab_gen.go:\n%s", schema)
	}
}
