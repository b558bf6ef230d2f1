package decoy

import (
	"strings"
	"testing"
)

// Every kind renders, picks paths of its own, and an unknown one fails loudly.
func TestKinds(t *testing.T) {
	for _, k := range Kinds {
		out := Render(testKey, Spec{TrapID: "trp_01m817ey5k16wag0c6y2j6vd3t", Name: "n", Type: k.Name, Path: "/p"}, newHitID(t))
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
