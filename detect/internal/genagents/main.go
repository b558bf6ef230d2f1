// Command genagents turns the ai.robots.txt project's robots.json into
// detect/data/agents.json: one entry per distinct user-agent token, with the
// free-text "function" normalised into one category and the operator reduced
// to a plain name. It is run by `go generate ./detect/`; its output is
// committed so a build never needs the network or this program.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/flytrap/flytrap/detect/internal/uatok"
)

// Categories written to agents.json; detect maps them to its Kind values.
const (
	catAgent     = "ai_agent"
	catAssistant = "ai_assistant"
	catSearch    = "ai_search"
	catCrawler   = "ai_crawler"
)

type upstream struct {
	Operator    string `json:"operator"`
	Respect     string `json:"respect"`
	Function    string `json:"function"`
	Frequency   string `json:"frequency"`
	Description string `json:"description"`
}

// Agent is one entry of agents.json.
type Agent struct {
	Name     string   `json:"name"`
	Match    string   `json:"match"` // lower-case tokens joined by one space
	Category string   `json:"category"`
	Operator string   `json:"operator,omitempty"`
	Function string   `json:"function"` // the upstream text, kept for review
	Aliases  []string `json:"aliases,omitempty"`
}

// File is the whole agents.json document.
type File struct {
	Source      string  `json:"source"`
	Commit      string  `json:"commit"`
	Date        string  `json:"date"`
	License     string  `json:"license"`
	GeneratedBy string  `json:"generated_by"`
	Agents      []Agent `json:"agents"`
}

// operatorOverrides fixes the few upstream operator texts no rule reduces to
// a name (a sentence about who runs the client rather than a name).
var operatorOverrides = map[string]string{
	"Lightpanda": "Lightpanda",
}

func main() {
	in := flag.String("in", "internal/genagents/robots.json", "ai.robots.txt robots.json")
	out := flag.String("out", "data/agents.json", "output file")
	commit := flag.String("commit", "", "upstream commit the input was taken from")
	date := flag.String("date", "", "upstream commit date (YYYY-MM-DD)")
	flag.Parse()
	if *commit == "" || *date == "" {
		log.Fatal("genagents: -commit and -date are required (they are recorded in the output)")
	}
	raw, err := os.ReadFile(*in)
	if err != nil {
		log.Fatalf("genagents: %v", err)
	}
	f, err := build(raw, *commit, *date)
	if err != nil {
		log.Fatalf("genagents: %v", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		log.Fatalf("genagents: encode: %v", err)
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		log.Fatalf("genagents: %v", err)
	}
	fmt.Fprintf(os.Stderr, "genagents: %d agents from %d upstream entries -> %s\n", len(f.Agents), countEntries(raw), *out)
}

func countEntries(raw []byte) int {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	return len(m)
}

func build(raw []byte, commit, date string) (*File, error) {
	var src map[string]upstream
	if err := json.Unmarshal(raw, &src); err != nil {
		return nil, fmt.Errorf("parse input: %w", err)
	}
	names := make([]string, 0, len(src))
	for n := range src {
		names = append(names, n)
	}
	sort.Strings(names)

	// Group upstream names that tokenise to the same match key
	// ("MistralAI-User" and "MistralAI-User/1.0", "meta-externalagent" and
	// "Meta-ExternalAgent"): a user agent cannot tell them apart.
	groups := map[string][]string{}
	var keys []string
	for _, n := range names {
		toks := uatok.Tokens(n)
		if len(toks) == 0 {
			return nil, fmt.Errorf("name %q has no tokens", n)
		}
		k := strings.Join(toks, " ")
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], n)
	}
	sort.Strings(keys)

	f := &File{
		Source:      "https://github.com/ai-robots-txt/ai.robots.txt/blob/" + commit + "/robots.json",
		Commit:      commit,
		Date:        date,
		License:     "MIT",
		GeneratedBy: "go generate ./detect/ (detect/internal/genagents)",
	}
	for _, k := range keys {
		members := groups[k]
		// The entry whose name is exactly the match key wins (the plain
		// "iaskspider" over "iaskspider/2.0"); then the one with an operator.
		sort.SliceStable(members, func(i, j int) bool {
			return rank(members[i], k, src) > rank(members[j], k, src)
		})
		best := members[0]
		a := Agent{
			Name:     best,
			Match:    k,
			Category: Category(src[best].Function),
			Function: strings.TrimSpace(src[best].Function),
		}
		for _, m := range members {
			if op := Operator(m, src[m].Operator); op != "" {
				a.Operator = op
				break
			}
		}
		a.Aliases = append(a.Aliases, members[1:]...)
		f.Agents = append(f.Agents, a)
	}
	return f, nil
}

func rank(name, key string, src map[string]upstream) int {
	r := 0
	if strings.Join(uatok.Tokens(name), " ") == key && !strings.ContainsAny(name, "/ ") {
		r += 4
	}
	if Operator(name, src[name].Operator) != "" {
		r += 2
	}
	if name == strings.ToLower(name) {
		r-- // prefer the capitalised spelling the operator documents
	}
	return r
}

// Category normalises the upstream free-text "function" field.
// The labelled buckets map directly; free text is read by keyword, search
// first (answer engines), then agents acting, then fetches for a user's
// prompt; everything else AI (training, scraping, data resale) is a crawler.
func Category(function string) string {
	f := strings.ToLower(strings.TrimSpace(function))
	switch f {
	case "ai agents", "undocumented ai agents", "ai coding agents":
		return catAgent
	case "ai assistants":
		return catAssistant
	case "ai search crawlers":
		return catSearch
	case "ai data scrapers", "ai data providers", "ai data scraper":
		return catCrawler
	}
	switch {
	case searchWord.MatchString(f): // "search", not "research"
		return catSearch
	case strings.Contains(f, "takes action"), strings.Contains(f, "on behalf of"), strings.Contains(f, "agent"):
		return catAgent
	case strings.Contains(f, "user-initiated"), strings.Contains(f, "user prompts"),
		strings.Contains(f, "user queries"), strings.Contains(f, "companion"):
		return catAssistant
	}
	return catCrawler
}

var (
	mdLink     = regexp.MustCompile(`\[([^\]]+)\]\([^)]*\)`)
	searchWord = regexp.MustCompile(`\bsearch\b`)
	unknowns   = map[string]bool{"": true, "unclear at this time.": true, "unclear at this time": true, "unknown": true, "unknown.": true}
	// Words that end the name inside a descriptive operator text:
	// "Kagi that fetches…", "Cohere to download…", "Ai2, a non-profit…".
	nameStops = []string{",", " that ", " to ", " (", " which ", " for ", " used ", " - ", ":"}
)

// Operator reduces the upstream operator text to a plain name: markdown links
// become their text, "Unclear at this time." becomes "", descriptions are cut
// to the leading name, a bare URL becomes its registrable host.
func Operator(name, s string) string {
	if o, ok := operatorOverrides[name]; ok {
		return o
	}
	s = strings.TrimSpace(s)
	if unknowns[strings.ToLower(s)] {
		return ""
	}
	if strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") {
		u, err := url.Parse(s)
		if err != nil || u.Hostname() == "" {
			return ""
		}
		labels := strings.Split(strings.TrimPrefix(u.Hostname(), "www."), ".")
		if len(labels) > 2 {
			labels = labels[len(labels)-2:]
		}
		return strings.Join(labels, ".")
	}
	s = mdLink.ReplaceAllString(s, "$1")
	if i := strings.Index(strings.ToLower(s), " company "); i >= 0 && strings.HasPrefix(strings.ToLower(s), "the ") {
		s = s[i+len(" company "):] // "the Chinese company Huawei"
	}
	for _, stop := range nameStops {
		if i := strings.Index(s, stop); i > 0 {
			s = s[:i]
		}
	}
	s = strings.TrimRight(strings.TrimSpace(s), ".;")
	if len(s) > 80 {
		return ""
	}
	return s
}
