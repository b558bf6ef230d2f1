package scalar

import (
	"encoding/base64"
	"fmt"
	"io"
	"strings"

	"entgo.io/contrib/entgql"
	"github.com/99designs/gqlgen/graphql"
	"github.com/vmihailenco/msgpack/v5"
)

// MarshalCursor writes a connection cursor as entgql does (base64 of msgpack).
func MarshalCursor(c entgql.Cursor[string]) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) { c.MarshalGQL(w) })
}

// UnmarshalCursor reads a cursor in entgql's format without entgql's decoder, which
// panics inside msgpack on a cursor naming its value twice ({"v": "a", "v": "b"}):
// decoding into a map has no value to decode into. What the value may be is checked
// against the list's order by graph.CheckCursor.
func UnmarshalCursor(v any) (entgql.Cursor[string], error) {
	s, ok := v.(string)
	if !ok {
		return entgql.Cursor[string]{}, fmt.Errorf("must be a string, not %s", kind(v))
	}
	return DecodeCursor(s)
}

// DecodeCursor decodes base64 (unpadded standard alphabet) of a msgpack map {"i": id, "v": value}.
func DecodeCursor(s string) (entgql.Cursor[string], error) {
	bad := fmt.Errorf("is not a cursor this API issued")
	var m map[string]any
	dec := msgpack.NewDecoder(base64.NewDecoder(base64.RawStdEncoding, strings.NewReader(s)))
	if err := dec.Decode(&m); err != nil {
		return entgql.Cursor[string]{}, bad
	}
	id, isString := m["i"].(string)
	if !isString {
		return entgql.Cursor[string]{}, bad
	}
	for k := range m {
		if k != "i" && k != "v" {
			return entgql.Cursor[string]{}, bad
		}
	}
	return entgql.Cursor[string]{ID: id, Value: m["v"]}, nil
}
