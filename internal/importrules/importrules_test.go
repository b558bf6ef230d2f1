package importrules

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestImportRules holds the module to its import rules (Rules; docs/architecture.md,
// "Import rules"), read from `go list -deps` of the rules' roots.
func TestImportRules(t *testing.T) {
	var roots []string
	for _, r := range Rules {
		roots = append(roots, Module+"/"+r.Root)
	}
	g := goList(t, roots...)
	for _, bad := range Check(g, Rules) {
		t.Error(bad)
	}
}

// The check finds what breaks each kind of rule, through any chain of imports; a test of
// the rules that could not fail would hold nothing.
func TestCheckFindsBrokenRules(t *testing.T) {
	m := func(p string) string { return Module + "/" + p }
	g := Graph{
		m("ent/schema"):        {m("ent/hook"), m("ids"), m("tally")},
		m("ent/hook"):          {m("ent")},
		m("ent"):               {"context"},
		m("tally"):             {m("ent")},
		m("ids"):               {"database/sql/driver"},
		m("detect"):            {m("detect/internal/x"), m("ent/schematype")},
		m("detect/internal/x"): {m("store/sqltext")},
		m("ent/schematype"):    {"time"},
		m("store/sqltext"):     {"strings"},
		m("decoy"):             {m("ids"), m("wrap")},
		m("wrap"):              {"database/sql"},
	}
	got := Check(g, Rules)
	want := []string{
		"ent/schema imports " + m("tally") + " (not allowed",
		"detect imports " + m("store/sqltext") + " (not allowed",
		"decoy imports database/sql (denied",
	}
	if len(got) != len(want) {
		t.Fatalf("Check found %d broken rules, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("finding %d = %q, want it to start %q", i, got[i], w)
		}
	}
	if !strings.Contains(got[1], m("detect/internal/x")+" → "+m("store/sqltext")) {
		t.Errorf("the finding names no chain: %q", got[1])
	}
	// Clean graphs pass.
	clean := Graph{m("ent/schema"): {m("ent")}, m("ent"): nil, m("detect"): {"strings"}, m("decoy"): {m("ids")}, m("ids"): {"database/sql/driver"}}
	if got := Check(clean, Rules); len(got) > 0 {
		t.Errorf("a clean graph breaks rules: %q", got)
	}
}

// goList is the import graph of pkgs and everything they depend on.
func goList(t *testing.T, pkgs ...string) Graph {
	t.Helper()
	goCmd := "go"
	if p, err := exec.LookPath("go"); err == nil {
		goCmd = p
	} else {
		goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}"}, pkgs...)
	cmd := exec.Command(goCmd, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	g := Graph{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 {
			g[f[0]] = f[1:]
		}
	}
	return g
}
