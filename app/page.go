package app

import (
	"strings"

	"entgo.io/contrib/entgql"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/graph/scalar"
)

// Page asks for one page of a list: at most Limit items after Cursor, the NextCursor of the
// page before ("" for the first).
type Page struct {
	Limit  int
	Cursor string
}

// Paged is one page of a list: its items, whether more follow, and the cursor to continue
// after its last item ("" when the page is empty).
type Paged[T any] struct {
	Items      []T
	HasMore    bool
	NextCursor string
}

// Cursors of a Page are entgql's (base64 of msgpack) in the URL-safe alphabet, so a client may
// paste NextCursor into a query string as it is.
var (
	stdToURL = strings.NewReplacer("+", "-", "/", "_")
	urlToStd = strings.NewReplacer("-", "+", "_", "/")
)

// after decodes the page's cursor, of a list of nodes with id prefix ordered by order (see
// CheckCursor); errors name the field "cursor".
func (p Page) after(prefix, order string) (*entgql.Cursor[string], error) {
	if p.Cursor == "" {
		return nil, nil
	}
	after, err := scalar.DecodeCursor(urlToStd.Replace(p.Cursor))
	if err != nil {
		return nil, apperr.Invalid("cursor", "is not a cursor this API issued")
	}
	if err := CheckCursor("cursor", &after, prefix, order); err != nil {
		return nil, err
	}
	return &after, nil
}

// paged is a connection's page as a Paged.
func paged[E, T any](edges []E, node func(E) T, info entgql.PageInfo[string]) *Paged[T] {
	out := &Paged[T]{Items: make([]T, 0, len(edges)), HasMore: info.HasNextPage}
	for _, e := range edges {
		out.Items = append(out.Items, node(e))
	}
	if info.EndCursor != nil {
		var b strings.Builder
		info.EndCursor.MarshalGQL(&b)
		out.NextCursor = stdToURL.Replace(strings.Trim(b.String(), `"`))
	}
	return out
}
