package decoy

import mrand "math/rand/v2"

// WhereLLMsTxt is a placement in llms.txt's text.
const WhereLLMsTxt = "llms_txt"

// llmsTxtKind is /llms.txt (text.go renders it): a plain-text index for language models,
// whose links a person reads as they are.
type llmsTxtKind struct{}

func init() { register(llmsTxtKind{}) }

func (llmsTxtKind) About() About {
	return About{Name: "llms_txt", Help: "/llms.txt", Order: 30, Format: FormatText, FixedPath: "/llms.txt",
		Wheres: map[string]string{WhereLLMsTxt: "llms.txt"}}
}

func (llmsTxtKind) render(r *renderer) Rendered { return r.llmsTxt() }
func (llmsTxtKind) skeletal()                   {}
func (llmsTxtKind) lureTarget()                 {}
func (llmsTxtKind) visibleLinks()               {}

// title: an llms.txt is headed by the site's name, as the convention has it.
func (llmsTxtKind) title(_, org string, _ *mrand.Rand) string { return org }
