// Package stix exports what Flytrap observed as a STIX 2.1 bundle (OASIS, STIX Version 2.1),
// for threat-intelligence platforms such as OpenCTI or MISP: per session an observed-data
// object over the visitor's address (ipv4-addr / ipv6-addr) and its HTTP traffic
// (network-traffic with the user agent), indicators for the addresses and fingerprints
// (user agent, the leaked prompt's SHA-256), and, where prompt injection was seen, an
// attack-pattern carrying its MITRE ATLAS id (AML.T0051) that the indicators indicate. A
// campaign becomes a campaign object that uses that attack pattern.
//
// Identifiers are deterministic (UUIDv5): exporting the same session twice gives the same
// ids, so a platform that imports both merges them. Observables use STIX's own namespace
// over their identifying properties, as the standard recommends (§2.9).
package stix

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/flytrap/flytrap/ecs"
)

// Session is one session as the export needs it.
type Session struct {
	ID             string
	SourceIP       string
	UserAgent      string
	Classification string // e.g. AI_AGENT_MALICIOUS, either case
	Severity       string // low, medium, high, critical
	Score          int
	Hits           int
	FirstSeen      time.Time
	LastSeen       time.Time
	Paths          []string // the trap paths it requested
}

// Campaign is a campaign (one leaked prompt, operator and model) as the export needs it.
type Campaign struct {
	ID         string
	PromptHash string // lower-case hex SHA-256 of the whitespace-normalized prompt
	Operator   string
	Model      string
	FirstSeen  time.Time
	LastSeen   time.Time
	Sessions   int64
}

// Export is what a bundle holds: sessions, optionally as one campaign's.
type Export struct {
	Sessions []Session
	Campaign *Campaign
	Created  time.Time // the objects' created/modified time: when exported
}

// scoNamespace is STIX 2.1's namespace for deterministic observable ids (§2.9).
var scoNamespace = uuid.MustParse("00abedb4-aa42-466c-9c01-fed23315a9b7")

// flytrapNamespace makes Flytrap's own objects' ids deterministic.
var flytrapNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://github.com/flytrap/flytrap/stix"))

func sdoID(typ string, key ...string) string {
	return typ + "--" + uuid.NewSHA1(flytrapNamespace, []byte(typ+"\x00"+strings.Join(key, "\x00"))).String()
}

func scoID(typ string, props map[string]any) string {
	b, _ := json.Marshal(props) // keys sorted, no spaces: the JCS form for these simple values
	return typ + "--" + uuid.NewSHA1(scoNamespace, b).String()
}

// ts is a STIX timestamp: UTC, RFC 3339, milliseconds.
func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// patternString quotes s as a STIX pattern string literal (quote and backslash escaped).
func patternString(s string) string { return "'" + patternEscaper.Replace(s) + "'" }

var patternEscaper = strings.NewReplacer(`\`, `\\`, `'`, `\'`)

// IdentityID is the identity of the exporting system, every object's created_by_ref.
var IdentityID = sdoID("identity", "flytrap")

// Bundle builds the STIX 2.1 bundle of e.
func Bundle(e Export) map[string]any {
	created := ts(e.Created)
	var objects []map[string]any
	seen := map[string]bool{}
	add := func(o map[string]any) {
		if id := o["id"].(string); !seen[id] {
			seen[id] = true
			objects = append(objects, o)
		}
	}
	sdo := func(typ, id string, fields map[string]any) map[string]any {
		o := map[string]any{"type": typ, "spec_version": "2.1", "id": id, "created": created, "modified": created,
			"created_by_ref": IdentityID}
		for k, v := range fields {
			o[k] = v
		}
		return o
	}
	add(map[string]any{"type": "identity", "spec_version": "2.1", "id": IdentityID, "created": created, "modified": created,
		"name": "Flytrap", "identity_class": "system", "description": "Flytrap honeypot and AI-agent detection"})

	injection := e.Campaign != nil
	for _, s := range e.Sessions {
		injection = injection || ecs.InjectionClass(s.Classification)
	}
	var attackPattern string
	if injection {
		attackPattern = sdoID("attack-pattern", ecs.ATLASPromptInjection)
		add(sdo("attack-pattern", attackPattern, map[string]any{
			"name":        ecs.ATLASPromptInjectionName,
			"description": "An adversary crafts prompts that make an LLM (here: an AI agent browsing a decoy) follow instructions it was not meant to.",
			"external_references": []any{map[string]any{"source_name": "mitre-atlas", "external_id": ecs.ATLASPromptInjection,
				"url": ecs.ATLASReference}},
		}))
	}
	indicates := func(indicator string) {
		if attackPattern != "" {
			add(sdo("relationship", sdoID("relationship", indicator, "indicates", attackPattern), map[string]any{
				"relationship_type": "indicates", "source_ref": indicator, "target_ref": attackPattern}))
		}
	}
	var campaignID string
	if c := e.Campaign; c != nil {
		campaignID = sdoID("campaign", c.ID)
		desc := fmt.Sprintf("Sessions that leaked the same injected prompt (SHA-256 %s)", c.PromptHash)
		if c.Operator != "" || c.Model != "" {
			desc += fmt.Sprintf(", operator %q, model %q", c.Operator, c.Model)
		}
		add(sdo("campaign", campaignID, map[string]any{
			"name": "Flytrap campaign " + c.ID, "description": desc + fmt.Sprintf("; %d sessions.", c.Sessions),
			"first_seen": ts(c.FirstSeen), "last_seen": ts(c.LastSeen),
			"external_references": []any{map[string]any{"source_name": "flytrap", "external_id": c.ID}},
		}))
		add(sdo("relationship", sdoID("relationship", campaignID, "uses", attackPattern), map[string]any{
			"relationship_type": "uses", "source_ref": campaignID, "target_ref": attackPattern}))
		if c.PromptHash != "" {
			ind := sdoID("indicator", "prompt", c.PromptHash)
			add(sdo("indicator", ind, map[string]any{
				"name":            "Injected prompt of campaign " + c.ID,
				"description":     "The SHA-256 of the whitespace-normalized prompt the sessions of this campaign leaked.",
				"indicator_types": []string{"malicious-activity"},
				"pattern":         "[artifact:hashes.'SHA-256' = " + patternString(c.PromptHash) + "]",
				"pattern_type":    "stix", "valid_from": ts(c.FirstSeen),
			}))
			indicates(ind)
			add(sdo("relationship", sdoID("relationship", ind, "indicates", campaignID), map[string]any{
				"relationship_type": "indicates", "source_ref": ind, "target_ref": campaignID}))
		}
	}
	for _, s := range e.Sessions {
		first, last := s.FirstSeen, s.LastSeen
		if last.Before(first) {
			last = first
		}
		var refs []string
		kind := "ipv4-addr"
		addr, err := netip.ParseAddr(s.SourceIP)
		if err == nil && addr.Unmap().Is6() {
			kind = "ipv6-addr"
		}
		var ipRef string
		if err == nil {
			value := addr.Unmap().String()
			ipRef = scoID(kind, map[string]any{"value": value})
			add(map[string]any{"type": kind, "spec_version": "2.1", "id": ipRef, "value": value})
			refs = append(refs, ipRef)
			ind := sdoID("indicator", kind, value)
			add(sdo("indicator", ind, map[string]any{
				"name":            "Address of a Flytrap session (" + ecs.ClassLabel(s.Classification) + ")",
				"indicator_types": indicatorTypes(s.Severity),
				"pattern":         "[" + kind + ":value = " + patternString(value) + "]",
				"pattern_type":    "stix", "valid_from": ts(first),
			}))
			indicates(ind)
			if campaignID != "" {
				add(sdo("relationship", sdoID("relationship", ind, "indicates", campaignID), map[string]any{
					"relationship_type": "indicates", "source_ref": ind, "target_ref": campaignID}))
			}
		}
		if ipRef != "" {
			ext := map[string]any{"request_method": "GET", "request_value": "/"}
			if len(s.Paths) > 0 {
				ext["request_value"] = s.Paths[0]
			}
			if s.UserAgent != "" {
				ext["request_header"] = map[string]any{"User-Agent": []string{s.UserAgent}} // the schema's dictionary of lists
			}
			nt := map[string]any{"type": "network-traffic", "spec_version": "2.1", "src_ref": ipRef,
				"protocols": []string{"tcp", "http"}, "start": ts(first), "end": ts(last),
				"extensions": map[string]any{"http-request-ext": ext}}
			nt["id"] = scoID("network-traffic", map[string]any{"src_ref": ipRef, "protocols": nt["protocols"],
				"start": nt["start"], "extensions": nt["extensions"]})
			add(nt)
			refs = append(refs, nt["id"].(string))
		}
		if s.UserAgent != "" {
			ind := sdoID("indicator", "user-agent", s.UserAgent)
			add(sdo("indicator", ind, map[string]any{
				"name":            "User agent of a Flytrap session (" + ecs.ClassLabel(s.Classification) + ")",
				"indicator_types": []string{"anomalous-activity"},
				"pattern":         "[network-traffic:extensions.'http-request-ext'.request_header.'User-Agent'[*] = " + patternString(s.UserAgent) + "]",
				"pattern_type":    "stix", "valid_from": ts(first),
			}))
			indicates(ind)
		}
		if len(refs) > 0 {
			od := sdoID("observed-data", s.ID)
			add(sdo("observed-data", od, map[string]any{
				"first_observed": ts(first), "last_observed": ts(last), "number_observed": max(s.Hits, 1),
				"object_refs": refs,
				"labels":      []string{"flytrap-session", strings.ToLower(s.Classification), "severity-" + strings.ToLower(s.Severity)},
				"external_references": []any{map[string]any{"source_name": "flytrap", "external_id": s.ID,
					"description": fmt.Sprintf("%s, severity %s, score %d", ecs.ClassLabel(s.Classification), s.Severity, s.Score)}},
			}))
			if campaignID != "" {
				add(sdo("relationship", sdoID("relationship", od, "related-to", campaignID), map[string]any{
					"relationship_type": "related-to", "source_ref": od, "target_ref": campaignID}))
			}
		}
	}
	key := e.Created.UTC().Format(time.RFC3339Nano)
	ids := make([]string, 0, len(objects))
	for _, o := range objects {
		ids = append(ids, o["id"].(string))
	}
	slices.Sort(ids)
	out := make([]any, len(objects))
	for i, o := range objects {
		out[i] = o
	}
	return map[string]any{"type": "bundle", "id": sdoID("bundle", append(ids, key)...), "objects": out}
}

// indicatorTypes is the indicator_types (STIX's open vocabulary) of a session's severity.
func indicatorTypes(sev string) []string {
	switch strings.ToLower(sev) {
	case "high", "critical":
		return []string{"malicious-activity"}
	}
	return []string{"anomalous-activity"}
}
