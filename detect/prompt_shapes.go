package detect

import (
	"encoding/json"
	"strings"

	"github.com/flytrap/flytrap/internal/clip"
)

// Provider-shaped prompts: an agent told to hand over its instructions often sends the
// request it makes to its model, or that request's system part. Where a provider's API
// keeps the system prompt is structural evidence on its own: the text there is the
// system prompt, whatever it says.
//
//   - Anthropic Messages API: {"system": "…"} or {"system": [{"type": "text", "text": "…"}]}
//   - OpenAI Chat Completions and Responses: {"messages"|"input": [{"role": "system"|"developer",
//     "content": "…" or [{"type": "text"|"input_text", "text": "…"}]}]}, and "instructions": "…"
//   - Gemini: {"systemInstruction"|"system_instruction": {"parts": [{"text": "…"}]}}

// Shapes of provider prompts (CapturedPrompt.Source).
const (
	ShapeAnthropic = "anthropic_system"
	ShapeOpenAI    = "openai_messages"
	ShapeGemini    = "gemini_system_instruction"
)

// ProviderPrompt is the system prompt of a provider-shaped request.
type ProviderPrompt struct {
	Text  string
	Shape string // one of the Shape… constants
	Model string // the request's "model", normalised (ExtractModel), "" when it names none
}

// maxProviderParts bounds the parts joined into one provider prompt.
const maxProviderParts = 16

// ProviderPrompts returns the system prompts a provider-shaped JSON document holds (at
// most one per shape), also when the document is itself a string field of the body
// ({"system_prompt": "{\"system\": …}"}), searched two levels deep. Bodies over
// MaxPromptBytes×2 are not parsed.
func ProviderPrompts(doc string) []ProviderPrompt {
	doc = strings.TrimSpace(doc)
	if len(doc) > 2*MaxPromptBytes || !strings.HasPrefix(doc, "{") {
		return nil
	}
	var v map[string]any
	if json.Unmarshal([]byte(doc), &v) != nil {
		return nil
	}
	var out []ProviderPrompt
	model := ""
	add := func(text, shape string) {
		text = strings.TrimSpace(text)
		if text == "" {
			return
		}
		for _, p := range out {
			if p.Shape == shape {
				return
			}
		}
		out = append(out, ProviderPrompt{clip.Bytes(text, MaxPromptBytes), shape, model})
	}
	var walk func(m map[string]any, depth int)
	walk = func(m map[string]any, depth int) {
		if name, ok := m["model"].(string); ok && len(name) <= 200 {
			model = ExtractModel(name) // Gemini names it in the URL, not the body
		}
		if s := partsText(m["system"]); s != "" {
			add(s, ShapeAnthropic)
		}
		for _, k := range []string{"systemInstruction", "system_instruction"} {
			if si, ok := m[k].(map[string]any); ok {
				add(partsText(si["parts"]), ShapeGemini)
			} else if s, ok := m[k].(string); ok {
				add(s, ShapeGemini)
			}
		}
		if s, ok := m["instructions"].(string); ok && (m["model"] != nil || m["input"] != nil) {
			add(s, ShapeOpenAI) // the Responses API
		}
		for _, k := range []string{"messages", "input"} {
			msgs, _ := m[k].([]any)
			var parts []string
			for i, msg := range msgs {
				if i >= maxProviderParts {
					break
				}
				mm, _ := msg.(map[string]any)
				if role, _ := mm["role"].(string); role == "system" || role == "developer" {
					if s := partsText(mm["content"]); s != "" {
						parts = append(parts, s)
					}
				}
			}
			add(strings.Join(parts, "\n\n"), ShapeOpenAI)
		}
		if depth == 0 {
			return
		}
		// A provider request wrapped in a field, as a JSON object or as a string.
		for _, val := range m {
			switch val := val.(type) {
			case map[string]any:
				walk(val, depth-1)
			case string:
				if t := strings.TrimSpace(val); strings.HasPrefix(t, "{") && len(t) <= 2*MaxPromptBytes {
					var inner map[string]any
					if json.Unmarshal([]byte(t), &inner) == nil {
						walk(inner, depth-1)
					}
				}
			}
		}
	}
	walk(v, 2)
	return out
}

// partsText is the text of a prompt value: a string, or the "text" of each part of an
// array of parts ({"type": "text", "text": "…"}, Gemini's {"text": "…"}), joined.
func partsText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for i, p := range v {
			if i >= maxProviderParts {
				break
			}
			switch p := p.(type) {
			case string:
				parts = append(parts, p)
			case map[string]any:
				if s, ok := p["text"].(string); ok {
					parts = append(parts, s)
				}
			}
		}
		return strings.Join(parts, "\n\n")
	}
	return ""
}

// AnalyzeSystemPrompt is AnalyzePrompt for text a provider-shaped request holds where
// its API keeps the system prompt (ProviderPrompts): the position is the structural cue
// and the AI cue, and is worth shapeWeight points, so a short but real instruction
// ("You are a pricing agent for Fabrikam. Be brief.") counts while "test" does not.
//
// The request's model names the model when the text does not.
func AnalyzeSystemPrompt(pp ProviderPrompt) (Prompt, bool) {
	p, _ := AnalyzePrompt(pp.Text)
	if p.Model == "" {
		p.Model = pp.Model
	}
	p.Score = min(p.Score+shapeWeight, 100)
	return p, p.Score >= PromptThreshold && len(strings.Fields(p.Text)) >= 3
}

// shapeWeight is what sitting in a provider's system field adds to a text's score.
const shapeWeight = 5
