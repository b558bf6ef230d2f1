package scalar

import (
	"encoding/json"
	"math"
	"testing"
)

func TestStrictScalars(t *testing.T) {
	if s, err := UnmarshalString("x"); err != nil || s != "x" {
		t.Fatal(s, err)
	}
	for _, v := range []any{json.Number("5"), 5, true, nil, []any{}, map[string]any{}} {
		if _, err := UnmarshalString(v); err == nil {
			t.Errorf("UnmarshalString(%#v) succeeded", v)
		}
	}
	for v, want := range map[any]int{int64(7): 7, json.Number("-3"): -3, 9: 9} {
		if n, err := UnmarshalInt(v); err != nil || n != want {
			t.Errorf("UnmarshalInt(%#v) = %d, %v", v, n, err)
		}
	}
	for _, v := range []any{"10", json.Number("1.5"), 2.0, int64(math.MaxInt32) + 1, true, nil} {
		if _, err := UnmarshalInt(v); err == nil {
			t.Errorf("UnmarshalInt(%#v) succeeded", v)
		}
	}
	if n, err := UnmarshalInt64(json.Number("9007199254740993")); err != nil || n != 9007199254740993 {
		t.Errorf("UnmarshalInt64 = %d, %v", n, err)
	}
}
