package main

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// The committed data/agents.json is exactly what `go generate ./detect/`
// makes from the vendored upstream file, so a hand edit or a stale file fails.
func TestCommittedOutputIsUpToDate(t *testing.T) {
	raw, err := os.ReadFile("robots.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := build(raw, "738c80d", "2026-08-22")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("../../data/agents.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), committed) {
		t.Fatal("data/agents.json is stale: run `go generate ./detect/`")
	}
}

func TestCategory(t *testing.T) {
	cases := map[string]string{
		"AI Agents":                           catAgent,
		"Undocumented AI Agents":              catAgent,
		"AI Coding Agents":                    catAgent,
		"Takes action based on user prompts.": catAgent,
		"AI Assistants":                       catAssistant,
		"Retrieves data to provide responses to user-initiated prompts.": catAssistant,
		"AI Search Crawlers":                                 catSearch,
		"Search result generation.":                          catSearch,
		"Collects data for AI search":                        catSearch,
		"AI tools and models for machine learning research.": catCrawler,
		"LLM training.":                                      catCrawler,
		"Scrapes data.":                                      catCrawler,
		"AI Data Providers":                                  catCrawler,
		"Data is sold.":                                      catCrawler,
		"Unclear at this time.":                              catCrawler,
	}
	for in, want := range cases {
		if got := Category(in); got != want {
			t.Errorf("Category(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOperator(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"GPTBot", "[OpenAI](https://openai.com)", "OpenAI"},
		{"x", "Unclear at this time.", ""},
		{"x", "Unknown", ""},
		{"x", "Kagi that fetches web content to answer user queries through Kagi AI, ", "Kagi"},
		{"x", "Ai2, a non-profit AI research institute", "Ai2"},
		{"x", "the Chinese company Huawei", "Huawei"},
		{"x", "https://brightdata.com/brightbot", "brightdata.com"},
		{"x", "Naget Inc (founded by Chris Samarinas)", "Naget Inc"},
		{"x", "Cohere to download training data for its LLMs", "Cohere"},
		{"x", "Meta/Facebook", "Meta/Facebook"},
		{"Lightpanda", "Anyone who downloads the Lightpanda client.", "Lightpanda"},
	}
	for _, c := range cases {
		if got := Operator(c.name, c.in); got != c.want {
			t.Errorf("Operator(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
