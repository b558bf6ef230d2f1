// Package importrules holds the import rules of docs/architecture.md as data, and the check
// that the module keeps them (importrules_test.go runs it over `go list -deps`):
//
//   - ent/schema, the data model, imports nothing of the engine or the API: only ent's
//     generated packages and the model's own helpers (apperr, ids, viewer);
//   - detect, the detection engine, is pure: the standard library, its own packages and
//     the value types the session state is stored as (ent/schematype, standard library only)
//     and the text clipping helper (internal/clip, standard library only);
//   - decoy, what traps serve, reaches no storage: no ent, store or database/sql.
package importrules

import (
	"fmt"
	"slices"
	"strings"
)

// Module is the module's import path.
const Module = "github.com/flytrap/flytrap"

// Rule constrains every package a root package depends on, directly or not.
type Rule struct {
	Root string // a package of the module, relative ("ent/schema")
	Why  string
	// Allowed, when set, lists the module's packages the root may depend on (relative;
	// "x/..." is x and everything under it); any other of the module's packages breaks the rule.
	Allowed []string
	// Denied lists packages (relative to the module, or standard library paths prefixed
	// "std:") the root must not depend on; "x/..." is x and everything under it.
	Denied []string
}

// Rules are the house's import rules.
var Rules = []Rule{
	{
		Root:    "ent/schema",
		Why:     "the data model imports nothing of the engine or the API",
		Allowed: []string{"ent/...", "apperr", "ids", "viewer"},
	},
	{
		Root:    "detect",
		Why:     "detection is pure: no storage, no engine, no API",
		Allowed: []string{"detect/...", "ent/schematype", "internal/clip"},
		Denied:  []string{"std:database/sql"},
	},
	{
		Root:   "decoy",
		Why:    "what traps serve reaches no storage",
		Denied: []string{"ent/...", "store/...", "record/...", "tally/...", "std:database/sql"},
	},
}

// Graph is each package's direct imports, by import path.
type Graph map[string][]string

// Check returns one line per dependency that breaks a rule, with the import chain that
// brings it in.
func Check(g Graph, rules []Rule) []string {
	var out []string
	for _, r := range rules {
		root := Module + "/" + r.Root
		if _, ok := g[root]; !ok {
			out = append(out, fmt.Sprintf("%s: not in the import graph", r.Root))
			continue
		}
		for _, dep := range deps(g, root) {
			if why := r.breaks(dep.path); why != "" {
				out = append(out, fmt.Sprintf("%s imports %s (%s; %s): %s", r.Root, dep.path, why, r.Why, strings.Join(dep.chain, " → ")))
			}
		}
	}
	return out
}

// breaks says why depending on path breaks r, or "".
func (r Rule) breaks(path string) string {
	rel, ours := strings.CutPrefix(path, Module+"/")
	if path == Module {
		rel, ours = "", true
	}
	for _, d := range r.Denied {
		if std, ok := strings.CutPrefix(d, "std:"); ok {
			if !ours && path == std {
				return "denied"
			}
			continue
		}
		if ours && matches(d, rel) {
			return "denied"
		}
	}
	if ours && r.Allowed != nil && rel != r.Root && !strings.HasPrefix(rel, r.Root+"/") &&
		!slices.ContainsFunc(r.Allowed, func(a string) bool { return matches(a, rel) }) {
		return "not allowed"
	}
	return ""
}

// matches says whether rel is pattern ("x" or "x/...").
func matches(pattern, rel string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == base || strings.HasPrefix(rel, base+"/")
	}
	return rel == pattern
}

type dep struct {
	path  string
	chain []string
}

// deps is every package root depends on, each with the shortest chain of imports to it.
func deps(g Graph, root string) []dep {
	seen := map[string][]string{root: {root}}
	queue := []string{root}
	var out []dep
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range g[p] {
			if _, ok := seen[imp]; ok {
				continue
			}
			chain := append(slices.Clone(seen[p]), imp)
			seen[imp] = chain
			out = append(out, dep{imp, chain})
			queue = append(queue, imp)
		}
	}
	slices.SortFunc(out, func(a, b dep) int { return strings.Compare(a.path, b.path) })
	return out
}
