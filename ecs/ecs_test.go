package ecs_test

import (
	"bufio"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/flytrap/flytrap/ecs"
)

type ecsField struct{ typ, normalization string }

// readCSV reads a vendored testdata list, skipping its # comment lines.
func readCSV(t *testing.T, name string) [][]string {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			rows = append(rows, strings.Split(line, ","))
		}
	}
	return rows
}

// flatten lists a document's leaf fields by dotted name.
func flatten(prefix string, m map[string]any, out map[string]any) {
	for k, v := range m {
		name := k
		if prefix != "" {
			name = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok {
			flatten(name, sub, out)
			continue
		}
		out[name] = v
	}
}

var threat = map[string]any{
	"id": "evt_01", "type": "threat.detected", "api_version": "2026-01-01", "org_id": "org_1",
	"created_at": "2026-11-27T20:00:00Z",
	"data": map[string]any{
		"classification": "ai_agent_malicious", "severity": "critical", "score": float64(95),
		"session_id": "ses_1", "source_ip": "203.0.113.9", "hit_count": float64(4),
		"traps_triggered": []any{"trp_1"}, "tripwires_fired": float64(2),
		"extracted_model": "gpt-4o", "extracted_operator": "",
	},
	"context": map[string]any{
		"user_agent": "Mozilla/5.0 (compatible; ChatGPT-User/1.0)",
		"traps":      []any{map[string]any{"id": "trp_1", "name": "Docs", "path": "/internal/docs"}},
		"signals":    []any{map[string]any{"name": "CALLBACK_HIT", "count": float64(3)}},
	},
}

// Every field FromEvent writes, outside the custom flytrap.* set, is a field of the published
// ECS reference (v8.17.0's generated/csv/fields.csv, vendored in testdata), arrays only where
// ECS normalizes the field to an array, and categorization values among ECS's allowed values.
func TestFieldsAreECS(t *testing.T) {
	fields := map[string]ecsField{}
	for _, r := range readCSV(t, "ecs_fields.csv") {
		fields[r[0]] = ecsField{r[1], r[2]}
	}
	if len(fields) < 1000 || fields["source.ip"].typ != "ip" {
		t.Fatalf("the vendored field list looks wrong: %d fields", len(fields))
	}
	allowed := map[string]map[string]bool{}
	for _, r := range readCSV(t, "ecs_allowed_values.csv") {
		if allowed[r[0]] == nil {
			allowed[r[0]] = map[string]bool{}
		}
		allowed[r[0]][r[1]] = true
	}
	events := []map[string]any{threat,
		{"id": "evt_2", "type": "trap.created", "created_at": "2026-11-27T20:00:00Z", "org_id": "org_1",
			"data": map[string]any{"id": "trp_1", "name": "Docs", "path": "/internal/docs", "type": "page"}},
		{"id": "evt_3", "type": "webhook.endpoint_disabled", "created_at": "2026-11-27T20:00:00Z", "org_id": "org_1",
			"data": map[string]any{"endpoint_id": "whk_1", "reason": "gone"}},
	}
	for _, ev := range events {
		flat := map[string]any{}
		flatten("", ecs.FromEvent(ev), flat)
		names := make([]string, 0, len(flat))
		for k := range flat {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, name := range names {
			v := flat[name]
			if strings.HasPrefix(name, "flytrap.") {
				continue // custom fields, namespaced as ECS asks
			}
			f, ok := fields[name]
			if !ok {
				t.Errorf("%s: %s is not an ECS field", ev["type"], name)
				continue
			}
			_, isArray := v.([]string)
			if isArray && f.normalization != "array" {
				t.Errorf("%s: %s is an array, ECS has it single", ev["type"], name)
			}
			if f.normalization == "array" && !isArray {
				t.Errorf("%s: %s is single (%T), ECS normalizes it to an array", ev["type"], name, v)
			}
			if vals := allowed[name]; vals != nil {
				list, _ := v.([]string)
				if s, ok := v.(string); ok {
					list = []string{s}
				}
				for _, s := range list {
					if !vals[s] {
						t.Errorf("%s: %s = %q is not an allowed ECS value", ev["type"], name, s)
					}
				}
			}
		}
		if _, ok := flat["event.kind"]; !ok {
			t.Errorf("%s: no event.kind", ev["type"])
		}
	}
}

func TestThreatMapping(t *testing.T) {
	line, err := ecs.Line(threat)
	if err != nil || !strings.HasSuffix(string(line), "}\n") || strings.Count(string(line), "\n") != 1 {
		t.Fatalf("line %q, %v", line, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(line, &doc); err != nil {
		t.Fatal(err)
	}
	flat := map[string]any{}
	flatten("", doc, flat)
	for k, want := range map[string]any{
		"@timestamp": "2026-11-27T20:00:00Z", "source.ip": "203.0.113.9", "event.kind": "alert",
		"user_agent.original": "Mozilla/5.0 (compatible; ChatGPT-User/1.0)", "event.severity": float64(99),
		"url.path": "/internal/docs", "event.id": "evt_01", "flytrap.session.id": "ses_1",
		"threat.framework": "MITRE ATLAS", "threat.indicator.ip": "203.0.113.9", "ecs.version": ecs.Version,
	} {
		if flat[k] != want {
			t.Errorf("%s = %v, want %v", k, flat[k], want)
		}
	}
	if ids, _ := flat["threat.technique.id"].([]any); len(ids) != 1 || ids[0] != ecs.ATLASPromptInjection {
		t.Errorf("threat.technique.id %v", flat["threat.technique.id"])
	}
	// A scanner is not prompt injection: no ATLAS technique.
	scan := map[string]any{"type": "threat.detected", "data": map[string]any{"classification": "scanner", "severity": "low"}}
	if _, ok := ecs.FromEvent(scan)["threat"].(map[string]any)["technique"]; ok {
		t.Error("a scanner was given the prompt-injection technique")
	}
}

// BenchmarkLine maps one threat event onto its ECS NDJSON line.
func BenchmarkLine(b *testing.B) {
	for b.Loop() {
		if _, err := ecs.Line(threat); err != nil {
			b.Fatal(err)
		}
	}
}
