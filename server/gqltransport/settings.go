package gqltransport

import (
	"errors"

	"github.com/flytrap/flytrap/settings"
)

// Limits are the GraphQL transport's settings: what a document may ask for before anything
// runs, and whether the schema may be introspected.
type Limits struct {
	Introspection   bool
	ComplexityLimit int
	DepthLimit      int
	MaxSelections   int // GraphQL selections per document, fragments expanded
}

// Declare declares the GraphQL transport's settings over l.
func (l *Limits) Declare(s *settings.Set) {
	s.Bool(&l.Introspection, "introspection", true, "allow GraphQL introspection queries")
	s.Int(&l.ComplexityLimit, "complexity-limit", 20000, "largest GraphQL query complexity (a connection costs its page size times its fields)").
		Doc("Largest GraphQL operation cost, priced from the schema: every alias counts, a connection costs its page size × one node, the analytics aggregates 1,000–2,000 each ([security](docs/security.md))")
	s.Int(&l.DepthLimit, "depth-limit", 12, "deepest GraphQL selection nesting")
	s.Rule(func() error {
		if l.ComplexityLimit < 1 || l.DepthLimit < 1 {
			return errors.New("complexity-limit and depth-limit: must be positive")
		}
		return nil
	})
	s.Int(&l.MaxSelections, "max-selections", 1000, "most GraphQL selections in one document, fragments expanded, checked before validation (10 to 5000)").
		Doc("Most selections in one GraphQL document, fragments expanded, checked before validation (10 to 5000)").
		Valid(func(v int) bool { return v >= 10 && v <= 5000 }, "must be between 10 and 5000 (validation cost grows with its square)")
}
