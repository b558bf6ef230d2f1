package webhook

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/flytrap/flytrap/ecs"
	"github.com/flytrap/flytrap/internal/clip"
)

// Formats are the bodies an endpoint can receive.
const (
	FormatJSON      = "json"       // the signed event envelope, as GET /api/v1/events lists it
	FormatSlack     = "slack"      // a Slack incoming-webhook message
	FormatTeams     = "teams"      // a Microsoft Teams message with an Adaptive Card
	FormatSplunkHEC = "splunk_hec" // a Splunk HTTP Event Collector event (see docs/webhooks.md)
	FormatECS       = "ecs"        // one Elastic Common Schema document, an NDJSON line (package ecs)
	FormatCEF       = "cef"        // an RFC 5424 syslog message with a CEF payload: syslog+tcp:// and syslog+tls:// URLs only
)

// ContentType is the Content-Type of an HTTP delivery in format.
func ContentType(format string) string {
	if format == FormatECS {
		return "application/x-ndjson"
	}
	return "application/json"
}

// RenderOptions are the instance's settings a message depends on.
type RenderOptions struct {
	// PublicURL is the dashboard's external base URL; alerts link to the session under it. Empty: no link.
	PublicURL string
}

// Render returns the body of a delivery of payload (an event envelope) in format.
// Threat events get a "context" object (see enrich); the JSON format is the envelope with it added.
func Render(format string, payload map[string]any, opts RenderOptions) ([]byte, error) {
	payload = enrich(payload, opts)
	switch format {
	case FormatJSON, "":
		return json.Marshal(payload)
	case FormatSlack:
		return json.Marshal(slack(payload))
	case FormatTeams:
		return json.Marshal(teams(payload))
	case FormatSplunkHEC:
		return json.Marshal(splunkHEC(payload))
	case FormatECS:
		return ecs.Line(payload)
	case FormatCEF:
		m, err := SyslogMessage(payload, opts)
		return []byte(m), err
	}
	return nil, fmt.Errorf("unknown webhook format %q", format)
}

// enrich returns payload with, for a threat event, context.classification_label (the class in
// words) and context.session_url (when a public URL is set) added to what the outbox stored
// (user agent, signals, traps). payload itself is not changed: it is the stored delivery.
func enrich(p map[string]any, opts RenderOptions) map[string]any {
	typ, d := str(p, "type"), dataOf(p)
	if !strings.HasPrefix(typ, "threat.") {
		return p
	}
	c := map[string]any{}
	if stored, ok := p["context"].(map[string]any); ok {
		maps.Copy(c, stored)
	}
	c["classification_label"] = ClassLabel(str(d, "classification"))
	if u := SessionURL(opts.PublicURL, str(d, "session_id")); u != "" {
		c["session_url"] = u
	}
	out := maps.Clone(p)
	out["context"] = c
	return out
}

// SessionURL is the dashboard's page of a session under base; empty without a base or a session.
func SessionURL(base, session string) string {
	if base == "" || session == "" {
		return ""
	}
	return strings.TrimRight(base, "/") + "/sessions/" + url.PathEscape(session)
}

// ClassLabel names a classification (either case) in words: the ECS, STIX and chat formats say
// it alike (one table, in package ecs).
func ClassLabel(class string) string { return ecs.ClassLabel(class) }

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

func dataOf(p map[string]any) map[string]any {
	d, _ := p["data"].(map[string]any)
	if d == nil {
		d = map[string]any{}
	}
	return d
}

// fact is one line of a message for people. value may hold text a visitor or a tenant
// chose: each format escapes it for its own markup.
type fact struct{ title, value string }

// maxFact bounds one fact's value (before escaping), so a message stays within chat tools' limits.
const maxFact = 300

// alert is an event summarized for people.
type alert struct {
	title string
	facts []fact
	link  string // the session in the dashboard, or empty
}

// summarize turns an event (enriched) into a title, facts and a link for people.
func summarize(p map[string]any) alert {
	typ, d := str(p, "type"), dataOf(p)
	c, _ := p["context"].(map[string]any)
	var a alert
	add := func(t, v string) {
		if v = oneLine(v); v != "" {
			a.facts = append(a.facts, fact{t, clip.Fit(v, maxFact)})
		}
	}
	switch {
	case strings.HasPrefix(typ, "threat."):
		verb := "Threat detected"
		if typ == "threat.escalated" {
			verb = "Threat escalated"
		}
		label := str(c, "classification_label")
		a.title = fmt.Sprintf("%s: %s (%s)", verb, label, str(d, "severity"))
		add("Classification", fmt.Sprintf("%s (%s)", label, strings.ToUpper(str(d, "classification"))))
		add("Severity", str(d, "severity"))
		add("Score", str(d, "score"))
		add("Source IP", str(d, "source_ip"))
		add("User agent", str(c, "user_agent"))
		add("Traps", trapsText(c))
		add("Signals", signalsText(c))
		add("Model", str(d, "extracted_model"))
		add("Operator", str(d, "extracted_operator"))
		add("Hits", str(d, "hit_count"))
		add("Tripwires fired", str(d, "tripwires_fired"))
		add("Session", str(d, "session_id"))
		a.link = str(c, "session_url")
	case strings.HasPrefix(typ, "trap."):
		a.title = fmt.Sprintf("Trap %s: %s", strings.TrimPrefix(typ, "trap."), clip.Fit(oneLine(str(d, "name")), maxFact))
		add("Path", str(d, "path"))
		add("Type", str(d, "type"))
		add("Trap", str(d, "id"))
	case typ == "session.triaged":
		a.title = fmt.Sprintf("Session %s by %s", str(d, "state"), clip.Fit(oneLine(cmp.Or(str(d, "triaged_by_name"), str(d, "triaged_by"))), maxFact))
		add("Previous state", str(d, "previous_state"))
		add("Severity", str(d, "severity"))
		add("Classification", str(d, "classification"))
		add("Source IP", str(d, "source_ip"))
		add("Session", str(d, "session_id"))
	default:
		a.title = "Flytrap: " + typ
		keys := make([]string, 0, len(d))
		for k := range d {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			add(k, str(d, k))
		}
	}
	return a
}

// trapsText lists the traps by name with their paths: "Docs (/internal/docs), …, and 2 more".
func trapsText(c map[string]any) string {
	ts, _ := c["traps"].([]any)
	parts := make([]string, 0, len(ts)+1)
	for _, t := range ts {
		m, _ := t.(map[string]any)
		name, path := str(m, "name"), str(m, "path")
		switch {
		case name == "":
			parts = append(parts, str(m, "id")+" (deleted)")
		case path == "":
			parts = append(parts, name)
		default:
			parts = append(parts, name+" ("+path+")")
		}
	}
	if n, _ := c["traps_more"].(float64); n > 0 {
		parts = append(parts, fmt.Sprintf("and %g more", n))
	} else if n, _ := c["traps_more"].(int); n > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", n))
	}
	return strings.Join(parts, ", ")
}

// signalsText lists the signals with their counts: "CALLBACK_HIT ×3, SYSTEM_PROMPT_LEAKED".
func signalsText(c map[string]any) string {
	ss, _ := c["signals"].([]any)
	parts := make([]string, 0, len(ss))
	for _, s := range ss {
		m, _ := s.(map[string]any)
		part := str(m, "name")
		if n := str(m, "count"); n != "" && n != "1" {
			part += " ×" + n
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// oneLine replaces control characters (line breaks, tabs) with spaces: a value cannot start a new line of markup.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
}

// slackMaxText keeps a section's text under Slack's 3000-character limit.
const slackMaxText = 2900

func slack(p map[string]any) map[string]any {
	a := summarize(p)
	var b strings.Builder
	b.WriteString("*" + slackEscape(a.title) + "*")
	if a.link != "" {
		b.WriteString("\n<" + slackEscape(a.link) + "|Open the session in Flytrap>")
	}
	for _, f := range a.facts {
		line := "\n• " + slackEscape(f.title) + ": `" + slackEscape(f.value) + "`"
		if b.Len()+len(line) > slackMaxText {
			b.WriteString("\n…")
			break
		}
		b.WriteString(line)
	}
	return map[string]any{
		"text": slackEscape(a.title), // the notification text, mrkdwn too
		"blocks": []any{
			map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": b.String()}},
			map[string]any{"type": "context", "elements": []any{
				map[string]any{"type": "mrkdwn", "text": slackEscape(str(p, "id") + " · " + str(p, "created_at"))},
			}},
		},
	}
}

// slackEscape escapes what Slack's mrkdwn treats as markup (links, mentions such as
// <!channel>, and the backtick that would end a code span); visitors control much of the text.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "`", "'").Replace(s)
}

// teamsEscape backslash-escapes (CommonMark) the characters of the Markdown subset Adaptive
// Cards render (bold, italic, links) and of their {{DATE()}} functions, and a leading list
// marker ("- ", "+ ", "1. "), so a visitor's text stays text.
func teamsEscape(s string) string {
	var b strings.Builder
	digits := true // only digits so far: a ". " after them would start a numbered list
	for i, r := range s {
		if strings.ContainsRune("\\`*_[](){}<>#~|", r) || (i == 0 && (r == '-' || r == '+')) || (r == '.' && digits && i > 0 && (i+1 == len(s) || s[i+1] == ' ')) {
			b.WriteByte('\\')
		}
		digits = digits && r >= '0' && r <= '9'
		b.WriteRune(r)
	}
	return b.String()
}

func teams(p map[string]any) map[string]any {
	a := summarize(p)
	fs := make([]any, 0, len(a.facts))
	for _, f := range a.facts {
		fs = append(fs, map[string]any{"title": teamsEscape(f.title), "value": teamsEscape(f.value)})
	}
	card := map[string]any{
		"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
		"type":    "AdaptiveCard",
		"version": "1.4",
		"body": []any{
			map[string]any{"type": "TextBlock", "size": "Medium", "weight": "Bolder", "text": teamsEscape(a.title), "wrap": true},
			map[string]any{"type": "FactSet", "facts": fs},
			map[string]any{"type": "TextBlock", "isSubtle": true, "size": "Small", "wrap": true,
				"text": teamsEscape(str(p, "id") + " · " + str(p, "created_at"))},
		},
	}
	if a.link != "" {
		card["actions"] = []any{map[string]any{"type": "Action.OpenUrl", "title": "Open the session in Flytrap", "url": a.link}}
	}
	return map[string]any{
		"type": "message",
		"attachments": []any{map[string]any{
			"contentType": "application/vnd.microsoft.card.adaptive",
			"content":     card,
		}},
	}
}

// splunkHEC maps an event onto the HEC event endpoint's JSON (/services/collector/event).
func splunkHEC(p map[string]any) map[string]any {
	var at int64
	if t, err := time.Parse(time.RFC3339, str(p, "created_at")); err == nil {
		at = t.Unix()
	}
	d := dataOf(p)
	fields := map[string]any{"event_type": str(p, "type"), "event_id": str(p, "id")}
	for _, k := range []string{"org_id", "session_id", "severity", "classification", "source_ip"} {
		if v := str(d, k); v != "" {
			fields[k] = v
		}
	}
	c, _ := p["context"].(map[string]any)
	for _, k := range []string{"classification_label", "session_url"} {
		if v := str(c, k); v != "" {
			fields[k] = v
		}
	}
	return map[string]any{
		"time":       at,
		"host":       "flytrap",
		"source":     "flytrap",
		"sourcetype": "flytrap:event",
		"event":      p,
		"fields":     fields,
	}
}
