package webhook_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flytrap/flytrap/webhook"
)

// Rewrite with: go test ./webhook/ -run TestAlertGolden -update
var updateGolden = flag.Bool("update", false, "rewrite the golden files under webhook/testdata")

// hostileAlert is a threat.escalated delivery as the outbox stores it, with the visitor's
// and a tenant's text trying Slack mentions and links, Markdown, line breaks and size.
func hostileAlert() map[string]any {
	var p map[string]any
	_ = json.Unmarshal([]byte(`{
		"id": "evt_01m84y43qrmx4vmrt3a4ae9kqh", "type": "threat.escalated", "api_version": "2026-11-01",
		"created_at": "2026-11-23T10:00:00Z",
		"data": {"session_id": "ses_01m84y43qrmx4vmrt3a4ae9kqh", "source_ip": "203.0.113.9",
			"classification": "ai_agent_malicious", "severity": "critical", "score": 97, "hit_count": 5,
			"tripwires_fired": 3, "extracted_model": "gpt-4o`+"`"+`<!here>", "extracted_operator": "*Acme* [corp](https://evil.example)",
			"traps_triggered": ["trp_1", "trp_2"]},
		"context": {
			"user_agent": "Mozilla/5.0 <!channel> <https://evil.example|click> `+"```"+` **bold** [x](https://evil.example) {{DATE(2017-02-14T06:00:00Z)}}\nSecond line",
			"signals": [{"name": "SYSTEM_PROMPT_LEAKED", "count": 1}, {"name": "CALLBACK_HIT", "count": 3}],
			"traps": [{"id": "trp_1", "name": "- Internal docs & <b>wiki</b>", "path": "/internal/docs"},
				{"id": "trp_2", "name": "", "path": ""}],
			"traps_more": 4
		}
	}`), &p)
	return p
}

// Each format's message for a hostile threat alert, with and without a public URL.
func TestAlertGolden(t *testing.T) {
	for _, format := range []string{webhook.FormatSlack, webhook.FormatTeams, webhook.FormatJSON, webhook.FormatSplunkHEC} {
		for _, linked := range []bool{true, false} {
			name := format
			opts := webhook.RenderOptions{}
			if linked {
				opts.PublicURL = "https://flytrap.example.com/"
			} else {
				name += "_nolink"
			}
			t.Run(name, func(t *testing.T) {
				body, err := webhook.Render(format, hostileAlert(), opts)
				if err != nil {
					t.Fatal(err)
				}
				var pretty bytes.Buffer
				if err := json.Indent(&pretty, body, "", "  "); err != nil {
					t.Fatalf("not JSON: %v", err)
				}
				pretty.WriteByte('\n')
				path := filepath.Join("testdata", "alert_"+name+".json")
				if *updateGolden {
					if err := os.MkdirAll("testdata", 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (create it with: go test ./webhook/ -run TestAlertGolden -update)", err)
				}
				if !bytes.Equal(pretty.Bytes(), want) {
					t.Errorf("%s differs from %s:\n%s", name, path, pretty.String())
				}
				checkAlert(t, format, body, linked)
			})
		}
	}
}

// checkAlert asserts what the golden files show, so that an -update cannot bless a regression.
func checkAlert(t *testing.T, format string, body []byte, linked bool) {
	t.Helper()
	s := string(body)
	const link = "https://flytrap.example.com/sessions/ses_01m84y43qrmx4vmrt3a4ae9kqh"
	if strings.Contains(s, link) != linked {
		t.Errorf("link present %t, want %t", strings.Contains(s, link), linked)
	}
	switch format {
	case webhook.FormatSlack:
		var msg struct {
			Text   string `json:"text"`
			Blocks []struct {
				Text struct {
					Text string `json:"text"`
				} `json:"text"`
			} `json:"blocks"`
		}
		_ = json.Unmarshal(body, &msg)
		text := msg.Blocks[0].Text.Text
		for _, bad := range []string{"<!channel>", "<!here>", "<https://evil", "```", "\nSecond line"} {
			if strings.Contains(text, bad) || strings.Contains(msg.Text, bad) {
				t.Errorf("slack text holds %q unescaped:\n%s", bad, text)
			}
		}
		for _, want := range []string{"Threat escalated: Malicious AI agent (critical)", "User agent: `Mozilla/5.0 &lt;!channel&gt;",
			"Traps: `- Internal docs &amp; &lt;b&gt;wiki&lt;/b&gt; (/internal/docs), trp_2 (deleted), and 4 more`",
			"Signals: `SYSTEM_PROMPT_LEAKED, CALLBACK_HIT ×3`", "Operator: `*Acme* [corp](https://evil.example)`"} {
			if !strings.Contains(text, want) {
				t.Errorf("slack text lacks %q:\n%s", want, text)
			}
		}
		if linked && !strings.Contains(text, "<"+link+"|Open the session in Flytrap>") {
			t.Errorf("slack link:\n%s", text)
		}
	case webhook.FormatTeams:
		for _, bad := range []string{"[x](https", "**bold**", "{{DATE", "<!channel>"} {
			if strings.Contains(s, bad) {
				t.Errorf("teams card holds %q unescaped", bad)
			}
		}
		if !strings.Contains(s, `Malicious AI agent`) || !strings.Contains(s, `\\- Internal docs`) {
			t.Errorf("teams card: %s", s)
		}
	case webhook.FormatJSON, webhook.FormatSplunkHEC:
		var msg map[string]any
		_ = json.Unmarshal(body, &msg)
		env := msg
		if format == webhook.FormatSplunkHEC {
			env, _ = msg["event"].(map[string]any)
		}
		// The envelope's fields are all still there, unrenamed; context is added.
		for _, k := range []string{"id", "type", "api_version", "created_at", "data"} {
			if env[k] == nil {
				t.Errorf("envelope lacks %s", k)
			}
		}
		c, _ := env["context"].(map[string]any)
		if c["classification_label"] != "Malicious AI agent" || c["user_agent"] == nil || (c["session_url"] == link) != linked {
			t.Errorf("context %v", c)
		}
		if strings.Contains(s, "<!channel>") { // encoding/json escapes < and >
			t.Error("raw markup in JSON")
		}
	}
}

// Values are bounded and a Slack section stays under its 3000-character limit whatever a visitor sends.
func TestAlertBounded(t *testing.T) {
	p := hostileAlert()
	c := p["context"].(map[string]any)
	c["user_agent"] = strings.Repeat("<é>", 5000)
	traps := []any{}
	for range 10 {
		traps = append(traps, map[string]any{"id": "trp_x", "name": strings.Repeat("&", 100), "path": "/" + strings.Repeat("a", 199)})
	}
	c["traps"] = traps
	for _, format := range []string{webhook.FormatSlack, webhook.FormatTeams} {
		body, err := webhook.Render(format, p, webhook.RenderOptions{PublicURL: "https://flytrap.example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if len(body) > 8000 {
			t.Errorf("%s message of %d bytes", format, len(body))
		}
		if format == webhook.FormatSlack {
			var msg struct {
				Blocks []struct {
					Text struct {
						Text string `json:"text"`
					} `json:"text"`
				} `json:"blocks"`
			}
			_ = json.Unmarshal(body, &msg)
			if n := len([]rune(msg.Blocks[0].Text.Text)); n > 3000 {
				t.Errorf("slack section of %d characters", n)
			}
		}
		if !json.Valid(body) || strings.Contains(string(body), "\\ufffd") {
			t.Errorf("%s: a character was cut in half", format)
		}
	}
}

// A session.triaged event reads as a sentence in chat formats, with the key's name escaped.
func TestTriagedAlert(t *testing.T) {
	p := map[string]any{"id": "evt_01m84y43qrmx4vmrt3a4ae9kqh", "type": "session.triaged", "api_version": "2026-11-22",
		"created_at": "2026-11-23T10:00:00Z", "data": map[string]any{"session_id": "ses_01m84y43qrmx4vmrt3a4ae9kqh",
			"state": "resolved", "previous_state": "open", "triaged_by": "key_1", "triaged_by_name": "ci <!here>",
			"severity": "high", "classification": "ai_agent", "source_ip": "203.0.113.9"}}
	for _, format := range []string{webhook.FormatSlack, webhook.FormatTeams} {
		body, err := webhook.Render(format, p, webhook.RenderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(body), "Session resolved by ci") || strings.Contains(string(body), "<!here>") {
			t.Errorf("%s: %s", format, body)
		}
		if !strings.Contains(strings.ReplaceAll(string(body), `\\_`, "_"), "ses_01m84y43qrmx4vmrt3a4ae9kqh") { // Teams escapes Markdown
			t.Errorf("%s does not name the session: %s", format, body)
		}
	}
}
