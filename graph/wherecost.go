package graph

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
)

// WhereLimits bound the filters (entgql's where inputs) of one operation before any of it runs:
// a filter becomes one SQL statement, and its shape, not the rows it returns, decides its cost.
// A 400-wide or of hasHitsWith body scans, 5 KB of JSON, cost 15.7 s of CPU on 20k hits.
type WhereLimits struct {
	// MaxNodes: predicates, list items and nesting levels in all of an operation's filters.
	MaxNodes int
	// MaxWidth: items in one and, or or hasXWith list.
	MaxWidth int
	// MaxScans: predicates that read what visitors sent row by row (ScanPredicate), summed over
	// the operation, once per row of each page a filter sits inside.
	MaxScans int
}

// DefaultWhereLimits are the flags' defaults.
var DefaultWhereLimits = WhereLimits{MaxNodes: 100, MaxWidth: 20, MaxScans: 2}

// Fixed bounds of a filter's shape.
const (
	// MaxWhereEdgeDepth: hasXWith inside hasXWith, at most this deep. Two reach every edge of
	// the schema from any list (sessions → hits → session); each level is a correlated subquery.
	MaxWhereEdgeDepth = 2
	// MaxWhereInItems: values in one xIn or xNotIn list (bound parameters of one statement).
	MaxWhereInItems = 100
	// WhereScanCost is what a scan predicate adds to an operation's complexity, once per row of
	// the pages it sits inside: a scan reads every row it may match, as an aggregate does.
	WhereScanCost = 1000
)

// ScanPredicate reports whether the predicate field of the where input typ reads text row by
// row, which no index serves: substring, prefix, suffix and case-folded matches on any text
// field of any type (a signal's detail and a session's user agent are a visitor's words too),
// and any comparison of a hit's body or a captured prompt's text.
func ScanPredicate(typ, field string) bool {
	switch typ {
	case "HitWhereInput":
		if strings.HasPrefix(field, "body") && !strings.HasPrefix(field, "bodyTruncated") {
			return true
		}
	case "PromptWhereInput":
		if strings.HasPrefix(field, "text") {
			return true
		}
	}
	for _, s := range []string{"Contains", "ContainsFold", "HasPrefix", "HasSuffix", "EqualFold"} {
		if strings.HasSuffix(field, s) {
			return true
		}
	}
	return false
}

// WhereBudget prices the filters of one operation against its limits; its counts add up over
// every filter it is given. The zero value of a limit is its default.
type WhereBudget struct {
	Limits WhereLimits
	schema *ast.Schema
	nodes  int
	scans  int
}

// NewWhereBudget returns an empty budget under limits, over the API's schema.
func NewWhereBudget(limits WhereLimits) *WhereBudget {
	if limits.MaxNodes < 1 {
		limits.MaxNodes = DefaultWhereLimits.MaxNodes
	}
	if limits.MaxWidth < 1 {
		limits.MaxWidth = DefaultWhereLimits.MaxWidth
	}
	if limits.MaxScans < 0 {
		limits.MaxScans = DefaultWhereLimits.MaxScans
	}
	return &WhereBudget{Limits: limits, schema: parsedSchema}
}

// WhereLimitError is a filter over one of the limits, its message naming the limit and its
// flag, or (Invalid) a filter ent cannot build.
type WhereLimitError struct {
	Msg     string
	Invalid bool
}

func (e *WhereLimitError) Error() string { return e.Msg }

func whereErr(format string, a ...any) error {
	return &WhereLimitError{Msg: "where: " + fmt.Sprintf(format, a...)}
}

// hasPredicate reports whether obj gives ent a predicate: a value, or a non-empty list. An
// empty object inside not, and, or or hasXWith is an error in ent's where inputs.
func hasPredicate(obj map[string]any) bool {
	for _, v := range obj {
		if l, isList := v.([]any); v != nil && (!isList || len(l) > 0) {
			return true
		}
	}
	return false
}

// Add prices v, a value of the where input typ as gqlparser gives it (objects as maps, lists
// as slices), evaluated mult times (the rows of the pages it sits inside). It returns the
// complexity the filter adds: one per node, WhereScanCost per scan, times mult.
func (b *WhereBudget) Add(typ string, v any, mult int) (int, error) {
	return b.walk(typ, v, 0, max(mult, 1))
}

func (b *WhereBudget) walk(typ string, v any, edges, mult int) (int, error) {
	obj, ok := v.(map[string]any)
	if !ok || b.schema == nil {
		return 0, nil // null, or a value validation refused already
	}
	def := b.schema.Types[typ]
	if def == nil {
		return 0, nil
	}
	cost := 0
	for name, val := range obj {
		if val == nil {
			continue
		}
		fd := def.Fields.ForName(name)
		if fd == nil {
			continue
		}
		if b.nodes++; b.nodes > b.Limits.MaxNodes {
			return 0, whereErr("the filters have more than %d predicates and nesting levels (--where-max-nodes)", b.Limits.MaxNodes)
		}
		cost += mult
		list, isList := val.([]any)
		switch {
		case name == "not":
			if sub, _ := val.(map[string]any); !hasPredicate(sub) {
				return 0, &WhereLimitError{Msg: "where: not has no predicate", Invalid: true}
			}
			c, err := b.walk(fd.Type.Name(), val, edges, mult)
			if err != nil {
				return 0, err
			}
			cost += c
		case name == "and" || name == "or" || strings.HasPrefix(name, "has") && strings.HasSuffix(name, "With"):
			if len(list) > b.Limits.MaxWidth {
				return 0, whereErr("%s has %d items, more than %d (--where-max-width)", name, len(list), b.Limits.MaxWidth)
			}
			depth := edges
			if name != "and" && name != "or" {
				if depth++; depth > MaxWhereEdgeDepth {
					return 0, whereErr("%s nests edge filters (hasXWith) more than %d deep", name, MaxWhereEdgeDepth)
				}
			}
			for _, item := range list {
				if sub, _ := item.(map[string]any); !hasPredicate(sub) {
					return 0, &WhereLimitError{Msg: fmt.Sprintf("where: an item of %s has no predicate", name), Invalid: true}
				}
				c, err := b.walk(fd.Type.Name(), item, depth, mult)
				if err != nil {
					return 0, err
				}
				cost += c
			}
		case isList && len(list) > MaxWhereInItems:
			return 0, whereErr("%s has %d items, more than %d", name, len(list), MaxWhereInItems)
		}
		if ScanPredicate(typ, name) {
			if b.scans += mult; b.scans > b.Limits.MaxScans {
				return 0, whereErr("more than %d substring or text predicates in one request, counted once per row of the pages they filter (--where-max-scans)", b.Limits.MaxScans)
			}
			cost += WhereScanCost * mult
		}
		if cost < 0 || cost > 1<<40 {
			cost = 1 << 40
		}
	}
	return cost, nil
}

// CheckWhere prices one typed where input (such as app.SessionFilter.Where) under limits, as the
// GraphQL complexity limit prices one in an operation.
func CheckWhere(limits WhereLimits, typ string, where any) error {
	raw, err := json.Marshal(where)
	if err != nil {
		return fmt.Errorf("where: %w", err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("where: %w", err)
	}
	_, err = NewWhereBudget(limits).Add(typ, v, 1)
	return err
}
