// Package scalar holds strict versions of GraphQL's String and Int: a variable of
// the wrong JSON type is refused, as the GraphQL specification asks, instead of
// being converted (gqlgen's defaults turn 5 into "5" and "10" into 10). Int and Time
// are written as gqlgen writes them, without its allocations per value (write.go).
package scalar

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/99designs/gqlgen/graphql"
)

// MarshalString writes a String.
func MarshalString(s string) graphql.Marshaler { return graphql.MarshalString(s) }

// UnmarshalString accepts only a string.
func UnmarshalString(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	return "", fmt.Errorf("must be a string, not %s", kind(v))
}

// MarshalInt writes an Int.
func MarshalInt(i int) graphql.Marshaler { return intValue(i) }

// UnmarshalInt accepts only an integer number that fits in 32 bits, as GraphQL's Int does.
func UnmarshalInt(v any) (int, error) {
	n, err := integer(v)
	if err != nil {
		return 0, err
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return 0, fmt.Errorf("must be an integer of 32 bits, not %d", n)
	}
	return int(n), nil
}

// MarshalInt64 writes an Int held in 64 bits (event positions).
func MarshalInt64(i int64) graphql.Marshaler { return intValue(i) }

// UnmarshalInt64 accepts only an integer number.
func UnmarshalInt64(v any) (int64, error) { return integer(v) }

func integer(v any) (int64, error) {
	switch v := v.(type) {
	case int:
		return int64(v), nil
	case int64:
		return v, nil
	case int32:
		return int64(v), nil
	case json.Number:
		n, err := v.Int64()
		if err != nil {
			return 0, fmt.Errorf("must be an integer, not %s", v)
		}
		return n, nil
	}
	return 0, fmt.Errorf("must be an integer, not %s", kind(v))
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, int, int32, int64, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
