package decoy

import "fmt"

// Kind is one type of trap, in one row: adding a kind is a row here and its renderer.
// The ent enum, the GraphQL and OpenAPI enums and the dashboard's list are generated
// from Kinds (internal/genvocab, run by go generate).
type Kind struct {
	Name string // the trap's type, as stored and in both APIs
	Help string // what it serves, in a few words, for the dashboard and the API documents
	// FixedPath is the one path the kind works at ("" for any): such a trap gets it.
	FixedPath string
	// Stems are plausible path prefixes for a trap whose path is left out.
	Stems []string
	// Listed says robots.txt disallows the kind's traps among its entries; robots.txt and
	// llms.txt themselves are not.
	Listed bool
	// Disallows says the decoy lists the site's listed traps (Spec.Disallow): robots.txt.
	Disallows bool
	// Post is how the listener answers a POST to the trap.
	Post PostHandling
	// skeleton says the decoy's text is the trap's own but for its placements (no
	// per-response detail): it is rendered once per trap and minute as a skeleton, and each
	// response splices its tokens in (skeleton.go).
	skeleton bool
	render   func(*renderer) Rendered
}

// PostHandling is how a kind answers a POST.
type PostHandling uint8

const (
	PostDecoy PostHandling = iota // the decoy, as for GET; a body is read for tokens and prompts
	PostMCP                       // JSON-RPC of a decoy MCP server (HandleMCP)
)

// Kinds are the trap types the engine serves, in the documented order.
var Kinds = []Kind{
	{Name: "page", Help: "an HTML document", Listed: true, skeleton: true, render: (*renderer).page, Stems: []string{
		"/internal/docs/", "/admin/portal/", "/wiki/engineering/", "/staff/handbook/",
		"/intranet/reports/", "/docs/internal/", "/backoffice/",
	}},
	{Name: "api", Help: "a JSON endpoint", Listed: true, render: (*renderer).api, Stems: []string{
		"/api/internal/v1/", "/api/v2/admin/", "/api/private/", "/internal/api/", "/v1/internal/",
	}},
	{Name: "llms_txt", Help: "/llms.txt", FixedPath: "/llms.txt", skeleton: true, render: (*renderer).llmsTxt},
	{Name: "robots", Help: "/robots.txt disallowing the other traps", FixedPath: "/robots.txt", Disallows: true, skeleton: true, render: (*renderer).robots},
	{Name: "credential", Help: "a leaked-looking config with planted keys", Listed: true, render: (*renderer).credentialFile, Stems: []string{
		"/.env.backup/", "/config/", "/deploy/secrets/", "/.aws/", "/backup/config/",
	}},
	{Name: "mcp", Help: "a decoy MCP server", Listed: true, Post: PostMCP, render: (*renderer).mcpInfo, Stems: []string{
		"/mcp/", "/.well-known/mcp/", "/api/mcp/",
	}},
}

// Types are the kinds' names: the allowed values of a trap's type.
var Types = func() []string {
	out := make([]string, len(Kinds))
	for i, k := range Kinds {
		if k.render == nil || (k.FixedPath == "" && len(k.Stems) == 0) {
			panic("decoy: kind " + k.Name + " has no renderer or no path")
		}
		out[i] = k.Name
	}
	return out
}()

// KindOf returns the kind named name.
func KindOf(name string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// MustKind returns the kind named name and panics when there is none: every stored type
// comes from Kinds, so an unknown one is a bug to see at once, not a page to serve.
func MustKind(name string) Kind {
	k, ok := KindOf(name)
	if !ok {
		panic(fmt.Sprintf("decoy: unknown trap kind %q", name))
	}
	return k
}

// Unlisted are the kinds robots.txt does not list.
func Unlisted() []string {
	var out []string
	for _, k := range Kinds {
		if !k.Listed {
			out = append(out, k.Name)
		}
	}
	return out
}
