// Package ecs maps Flytrap's events onto the Elastic Common Schema (ECS), as one JSON
// document per event (NDJSON when written one per line). The webhook format "ecs" and the
// command-line client's `-o ecs` both use FromEvent, so a SIEM sees one shape wherever the
// event came from. Every field name used here is in the published ECS field reference
// (checked by TestFieldsAreECS against testdata/ecs_fields.csv); Flytrap's own fields
// that ECS has no name for live under "flytrap.*", as ECS asks of custom fields.
package ecs

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Version is the ECS version the documents declare (ecs.version) and the field list was taken from.
const Version = "8.17.0"

// ATLASPromptInjection is MITRE ATLAS's technique for LLM prompt injection.
const (
	ATLASPromptInjection     = "AML.T0051"
	ATLASPromptInjectionName = "LLM Prompt Injection"
	ATLASReference           = "https://atlas.mitre.org/techniques/AML.T0051"
)

// severityNumber is event.severity for Flytrap's severities (ECS leaves the scale to the source;
// these follow the common 0–100 risk scale also used by Elastic's detection rules).
var severityNumber = map[string]int{"low": 21, "medium": 47, "high": 73, "critical": 99}

// FromEvent maps an event envelope (as GET /api/v1/events lists it, or a webhook's JSON
// body, optionally with the alert "context" object) onto an ECS document. It never fails:
// fields the envelope lacks are left out. The result is nested objects, ready for json.Marshal.
func FromEvent(p map[string]any) map[string]any {
	typ, d := str(p, "type"), obj(p, "data")
	c := obj(p, "context")
	doc := map[string]any{}
	set := func(path string, v any) {
		switch x := v.(type) {
		case string:
			if x == "" {
				return
			}
		case []string:
			if len(x) == 0 {
				return
			}
		case nil:
			return
		}
		parts := strings.Split(path, ".")
		m := doc
		for _, k := range parts[:len(parts)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = v
	}
	set("@timestamp", str(p, "created_at"))
	set("ecs.version", Version)
	set("event.id", str(p, "id"))
	set("event.action", typ)
	set("event.dataset", "flytrap.events")
	set("event.module", "flytrap")
	set("event.provider", "flytrap")
	set("observer.vendor", "Flytrap")
	set("observer.product", "Flytrap")
	set("observer.type", "honeypot")
	set("organization.id", str(p, "org_id"))
	set("flytrap.api_version", str(p, "api_version"))
	switch {
	case strings.HasPrefix(typ, "threat."):
		set("event.kind", "alert")
		set("event.category", []string{"intrusion_detection", "threat"})
		set("event.type", []string{"indicator", "info"})
		set("event.outcome", "success")
		sev := strings.ToLower(str(d, "severity"))
		if n, ok := severityNumber[sev]; ok {
			set("event.severity", n)
			set("event.risk_score", float64(n))
		}
		set("event.reason", reason(typ, d))
		set("source.ip", str(d, "source_ip"))
		set("source.address", str(d, "source_ip"))
		set("user_agent.original", str(c, "user_agent"))
		set("flytrap.session.id", str(d, "session_id"))
		set("flytrap.classification", strings.ToUpper(str(d, "classification")))
		set("flytrap.severity", sev)
		if v, ok := d["score"].(float64); ok {
			set("flytrap.score", v)
		}
		if v, ok := d["hit_count"].(float64); ok {
			set("flytrap.hit_count", v)
		}
		set("flytrap.extracted_model", str(d, "extracted_model"))
		set("flytrap.extracted_operator", str(d, "extracted_operator"))
		if v, ok := d["tripwires_fired"].(float64); ok {
			set("flytrap.tripwires_fired", v)
		}
		set("rule.name", "flytrap "+strings.ToLower(str(d, "classification")))
		set("rule.category", ClassLabel(str(d, "classification")))
		set("url.full", str(c, "session_url"))
		if paths := trapPaths(c); len(paths) > 0 {
			set("url.path", paths[0])
			set("flytrap.traps.paths", paths)
		}
		set("flytrap.traps.ids", strs(d["traps_triggered"]))
		if sigs := signals(c); len(sigs) > 0 {
			set("flytrap.signals", sigs)
		}
		set("threat.framework", "MITRE ATLAS")
		if InjectionClass(str(d, "classification")) {
			set("threat.technique.id", []string{ATLASPromptInjection})
			set("threat.technique.name", []string{ATLASPromptInjectionName})
			set("threat.technique.reference", []string{ATLASReference})
		}
		if ip := str(d, "source_ip"); ip != "" {
			set("threat.indicator.type", "ipv4-addr")
			if strings.Contains(ip, ":") {
				set("threat.indicator.type", "ipv6-addr")
			}
			set("threat.indicator.ip", ip)
		}
		set("related.ip", nonEmpty(str(d, "source_ip")))
	case strings.HasPrefix(typ, "trap."):
		set("event.kind", "event")
		set("event.category", []string{"configuration"})
		set("event.type", []string{"change"})
		set("url.path", str(d, "path"))
		set("flytrap.trap.id", str(d, "id"))
		set("flytrap.trap.name", str(d, "name"))
		set("flytrap.trap.type", str(d, "type"))
	default:
		set("event.kind", "event")
		set("event.category", []string{"configuration"})
		set("event.type", []string{"info"})
	}
	set("message", message(typ, d))
	return doc
}

// Line is FromEvent's document as one NDJSON line, with its newline.
func Line(p map[string]any) ([]byte, error) {
	b, err := json.Marshal(FromEvent(p))
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// InjectionClass reports whether a classification means prompt injection was attempted on
// the visitor (an AI agent followed, or leaked, injected instructions).
func InjectionClass(class string) bool {
	switch strings.ToUpper(class) {
	case "AI_AGENT", "AI_AGENT_MALICIOUS", "AI_ASSISTANT":
		return true
	}
	return false
}

// ClassLabel names a classification (either case) in words.
func ClassLabel(class string) string {
	switch strings.ToUpper(class) {
	case "HUMAN":
		return "Human"
	case "BOT":
		return "Bot"
	case "CRAWLER":
		return "Search crawler"
	case "AI_CRAWLER":
		return "AI crawler"
	case "AI_ASSISTANT":
		return "AI assistant"
	case "AI_AGENT":
		return "AI agent"
	case "AI_AGENT_MALICIOUS":
		return "Malicious AI agent"
	case "SCANNER":
		return "Vulnerability scanner"
	}
	return class
}

func reason(typ string, d map[string]any) string {
	verb := "Threat detected"
	if typ == "threat.escalated" {
		verb = "Threat escalated"
	}
	return fmt.Sprintf("%s: %s (%s)", verb, ClassLabel(str(d, "classification")), str(d, "severity"))
}

func message(typ string, d map[string]any) string {
	switch {
	case strings.HasPrefix(typ, "threat."):
		return reason(typ, d) + " from " + str(d, "source_ip")
	case strings.HasPrefix(typ, "trap."):
		return "Trap " + strings.TrimPrefix(typ, "trap.") + ": " + str(d, "name")
	}
	return "Flytrap: " + typ
}

func trapPaths(c map[string]any) []string {
	ts, _ := c["traps"].([]any)
	var out []string
	for _, t := range ts {
		m, _ := t.(map[string]any)
		if p := str(m, "path"); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func signals(c map[string]any) []string {
	ss, _ := c["signals"].([]any)
	var out []string
	for _, s := range ss {
		m, _ := s.(map[string]any)
		if n := str(m, "name"); n != "" {
			out = append(out, n)
		}
	}
	return out
}

func strs(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return nil
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func str(m map[string]any, k string) string {
	switch v := m[k].(type) {
	case string:
		return v
	case nil:
		return ""
	case float64:
		return fmt.Sprintf("%g", v)
	default:
		return fmt.Sprint(v)
	}
}

func obj(m map[string]any, k string) map[string]any {
	d, _ := m[k].(map[string]any)
	if d == nil {
		d = map[string]any{}
	}
	return d
}
