package decoy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Every kind renders, picks paths of its own, and an unknown one fails loudly.
func TestKinds(t *testing.T) {
	for _, k := range Kinds {
		out := Render(testKey, Spec{TrapID: "trp_01m817ey5k16wag0c6y2j6vd3t", Title: "n", Type: k.Name, Path: "/p"}, newHitID(t))
		if out.Status == 0 || len(out.Body) == 0 {
			t.Errorf("%s renders nothing", k.Name)
		}
		p := Path(k.Name)
		if k.FixedPath != "" && p != k.FixedPath {
			t.Errorf("%s: path %q, want %q", k.Name, p, k.FixedPath)
		}
		if k.FixedPath == "" && !hasAnyPrefix(p, k.Stems) {
			t.Errorf("%s: path %q has none of its stems", k.Name, p)
		}
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "unknown trap kind") {
			t.Fatalf("an unknown kind rendered (recovered %v)", p)
		}
	}()
	Render(testKey, Spec{Type: "bogus"}, newHitID(t))
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// incompleteKind declares nothing but its name: registering it must stop the program.
type incompleteKind struct{ about About }

func (k incompleteKind) About() About              { return k.about }
func (incompleteKind) render(r *renderer) Rendered { return Rendered{} }

// A kind that forgets what it must declare, or clashes with another, is refused with
// every reason, and register panics with them: the program stops at start, loudly.
func TestRegistryRefusesIncompleteKinds(t *testing.T) {
	for _, c := range []struct {
		about About
		want  []string
	}{
		{About{Name: "unfinished_kind"}, []string{"no help text", "no order", "no path", "no format"}},
		{About{Name: "Sitemap.xml", Help: "h", Order: 99, FixedPath: "/sitemap.xml", Format: FormatText}, []string{"not lower-case snake_case"}},
		{About{Name: "page", Help: "h", Order: 10, Stems: []string{"/x/"}, Format: FormatHTML}, []string{`name "page" registered twice`, "order 10 taken by page"}},
		{About{Name: "robots_too", Help: "h", Order: 99, FixedPath: "/robots.txt", Format: FormatText}, []string{"fixed path /robots.txt taken by robots"}},
		{About{Name: "notes", Help: "h", Order: 99, Stems: []string{"/n/"}, Format: FormatText,
			Wheres: map[string]string{WhereHTMLComment: "a comment", WhereMCPTool: "a tool", "notes_line": ""}},
			[]string{`where "html_comment" is a shared one`, `where "mcp_tool" taken by mcp`, `where "notes_line" needs a snake_case name and a label`}},
	} {
		_, err := resolve(incompleteKind{c.about}, Kinds)
		if err == nil {
			t.Fatalf("%+v: accepted", c.about)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: error %q lacks %q", c.about, err, w)
			}
		}
	}
	func() {
		defer func() {
			if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "no help text") {
				t.Fatalf("register accepted an incomplete kind (recovered %v)", p)
			}
		}()
		register(incompleteKind{About{Name: "unfinished_kind"}})
	}()
	if _, ok := KindOf("unfinished_kind"); ok {
		t.Fatal("a refused kind was registered")
	}
	// A complete one resolves, its capabilities read from the methods it has.
	k, err := resolve(incompleteKind{About{Name: "notes", Help: "h", Order: 99, Stems: []string{"/n/"}, Format: FormatText}}, Kinds)
	if err != nil || k.Speaks() || k.LureTarget() || k.VisibleLinks() || k.Disallows() || k.skeleton {
		t.Fatalf("resolve: %+v, %v", k, err)
	}
}

// The registry is in the documented order, and each kind's capabilities are what the
// listener and the lure proxy relied on when they were lists of names.
func TestKindCapabilities(t *testing.T) {
	var known []string // a kind added later may stand anywhere; these keep their order
	for _, n := range Names() {
		if slices.Contains([]string{"page", "api", "llms_txt", "robots", "credential", "mcp"}, n) {
			known = append(known, n)
		}
	}
	if got := strings.Join(known, " "); got != "page api llms_txt robots credential mcp" {
		t.Fatalf("kinds in order %q", got)
	}
	caps := func(k *Kind) string {
		var out []string
		for _, c := range []struct {
			name string
			has  bool
		}{{"skeleton", k.skeleton}, {"protocol", k.Speaks()}, {"lure", k.LureTarget()}, {"visible", k.VisibleLinks()},
			{"disallows", k.Disallows()}, {"listed", k.Listed}} {
			if c.has {
				out = append(out, c.name)
			}
		}
		return strings.Join(out, ",")
	}
	want := map[string]string{
		"page":       "skeleton,lure,listed",
		"api":        "lure,listed",
		"llms_txt":   "skeleton,lure,visible",
		"robots":     "skeleton,visible,disallows",
		"credential": "lure,listed",
		"mcp":        "protocol,lure,listed",
	}
	for _, k := range Kinds {
		if got := caps(k); want[k.Name] != "" && got != want[k.Name] {
			t.Errorf("%s: capabilities %s, want %s", k.Name, got, want[k.Name])
		}
	}
	if !VisibleLinksAt("/llms.txt") || !VisibleLinksAt("/robots.txt") || VisibleLinksAt("/mcp/x") {
		t.Fatal("VisibleLinksAt")
	}
	for w, label := range map[string]string{WhereLLMsTxt: "llms.txt", WhereMCPTool: "an MCP tool definition", WhereHTMLComment: "an HTML comment"} {
		if WhereLabel(w) != label {
			t.Errorf("label of %s: %q", w, WhereLabel(w))
		}
	}
}
