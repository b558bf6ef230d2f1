package webhook

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Formats are the bodies an endpoint can receive.
const (
	FormatJSON      = "json"       // the signed event envelope, as GET /api/v1/events lists it
	FormatSlack     = "slack"      // a Slack incoming-webhook message
	FormatTeams     = "teams"      // a Microsoft Teams message with an Adaptive Card
	FormatSplunkHEC = "splunk_hec" // a Splunk HTTP Event Collector event (see docs/webhooks.md)
)

// Render returns the body of a delivery of payload (an event envelope) in format.
func Render(format string, payload map[string]any) ([]byte, error) {
	switch format {
	case FormatJSON, "":
		return json.Marshal(payload)
	case FormatSlack:
		return json.Marshal(slack(payload))
	case FormatTeams:
		return json.Marshal(teams(payload))
	case FormatSplunkHEC:
		return json.Marshal(splunkHEC(payload))
	}
	return nil, fmt.Errorf("unknown webhook format %q", format)
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

func dataOf(p map[string]any) map[string]any {
	d, _ := p["data"].(map[string]any)
	if d == nil {
		d = map[string]any{}
	}
	return d
}

// fact is one line of a message for people.
type fact struct{ title, value string }

// summarize turns an event into a title and facts for people.
func summarize(p map[string]any) (title string, facts []fact) {
	typ, d := str(p, "type"), dataOf(p)
	add := func(t, k string) {
		if v := str(d, k); v != "" {
			facts = append(facts, fact{t, v})
		}
	}
	switch {
	case strings.HasPrefix(typ, "threat."):
		verb := "Threat detected"
		if typ == "threat.escalated" {
			verb = "Threat escalated"
		}
		title = fmt.Sprintf("%s: %s (%s)", verb, strings.ToUpper(str(d, "classification")), str(d, "severity"))
		add("Severity", "severity")
		add("Score", "score")
		add("Source IP", "source_ip")
		add("Session", "session_id")
		add("Hits", "hit_count")
		add("Tripwires fired", "tripwires_fired")
		add("Model", "extracted_model")
		add("Operator", "extracted_operator")
	case strings.HasPrefix(typ, "trap."):
		title = fmt.Sprintf("Trap %s: %s", strings.TrimPrefix(typ, "trap."), str(d, "name"))
		add("Path", "path")
		add("Type", "type")
		add("Trap", "id")
	default:
		title = "Flytrap: " + typ
		keys := make([]string, 0, len(d))
		for k := range d {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			add(k, k)
		}
	}
	return title, facts
}

func slack(p map[string]any) map[string]any {
	title, facts := summarize(p)
	var b strings.Builder
	b.WriteString("*" + slackEscape(title) + "*")
	for _, f := range facts {
		b.WriteString("\n• " + slackEscape(f.title) + ": `" + slackEscape(f.value) + "`")
	}
	return map[string]any{
		"text": title, // the notification text
		"blocks": []any{
			map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": b.String()}},
			map[string]any{"type": "context", "elements": []any{
				map[string]any{"type": "mrkdwn", "text": slackEscape(str(p, "id") + " · " + str(p, "created_at"))},
			}},
		},
	}
}

// slackEscape escapes what Slack's mrkdwn treats as markup; visitors control much of the text.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "`", "'").Replace(s)
}

func teams(p map[string]any) map[string]any {
	title, facts := summarize(p)
	fs := make([]any, 0, len(facts))
	for _, f := range facts {
		fs = append(fs, map[string]any{"title": f.title, "value": f.value})
	}
	return map[string]any{
		"type": "message",
		"attachments": []any{map[string]any{
			"contentType": "application/vnd.microsoft.card.adaptive",
			"content": map[string]any{
				"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
				"type":    "AdaptiveCard",
				"version": "1.4",
				"body": []any{
					map[string]any{"type": "TextBlock", "size": "Medium", "weight": "Bolder", "text": title, "wrap": true},
					map[string]any{"type": "FactSet", "facts": fs},
					map[string]any{"type": "TextBlock", "isSubtle": true, "size": "Small", "wrap": true,
						"text": str(p, "id") + " · " + str(p, "created_at")},
				},
			},
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
	return map[string]any{
		"time":       at,
		"host":       "flytrap",
		"source":     "flytrap",
		"sourcetype": "flytrap:event",
		"event":      p,
		"fields":     fields,
	}
}
