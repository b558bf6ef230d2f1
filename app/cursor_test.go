package app

import (
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"entgo.io/contrib/entgql"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/graph/scalar"
	"github.com/flytrap/flytrap/ids"
)

// TestOrderValuesCoverSchema: every order field of the schema has a cursor value type,
// so a new order field cannot page with unchecked cursors.
func TestOrderValuesCoverSchema(t *testing.T) {
	raw, err := os.ReadFile("../graph/ent.graphqls")
	if err != nil {
		t.Fatal(err)
	}
	enums := regexp.MustCompile(`(?s)enum (\w+OrderField) \{(.*?)\}`).FindAllStringSubmatch(string(raw), -1)
	if len(enums) < 5 {
		t.Fatalf("found %d order field enums in ent.graphqls", len(enums))
	}
	for _, e := range enums {
		for _, v := range strings.Fields(e[2]) {
			if _, ok := orderValues[v]; !ok {
				t.Errorf("%s.%s has no entry in orderValues", e[1], v)
			}
		}
	}
}

// issuedCursor is a cursor as entgql issues it.
func issuedCursor(id string, v any) string {
	var b strings.Builder
	entgql.Cursor[string]{ID: id, Value: v}.MarshalGQL(&b)
	return strings.Trim(b.String(), `"`)
}

// cursorCase is one connection a cursor may be sent to.
type cursorCase struct{ prefix, order string }

var cursorCases = []cursorCase{
	{ids.Session, "LAST_SEEN"}, {ids.Session, "SCORE"}, {ids.Event, "POSITION"}, {ids.Trap, "NAME"},
	{ids.Trap, ""}, {ids.Delivery, "CREATED_AT"}, {ids.Site, "CREATED_AT"}, {ids.Hit, "RECEIVED_AT"},
}

// FuzzConnectionCursor decodes any text as a connection cursor (base64 of msgpack),
// then checks it for every kind of list: nothing panics; what CheckCursor accepts has
// the order field's type, and marshals to a cursor that decodes and checks the same;
// positionOf refuses with a bad-input error, never another one (an INTERNAL).
func FuzzConnectionCursor(f *testing.F) {
	when := time.Date(2026, 11, 22, 9, 0, 0, 123e6, time.UTC)
	for _, s := range []string{
		issuedCursor(ids.New(ids.Session), when), issuedCursor(ids.New(ids.Event), int64(42)),
		issuedCursor(ids.New(ids.Trap), "name"), issuedCursor(ids.New(ids.Trap), nil),
		issuedCursor(ids.New(ids.Session), int8(-3)), issuedCursor(ids.New(ids.Event), uint64(math.MaxUint64)),
		issuedCursor(ids.New(ids.Event), 1.5), issuedCursor(ids.New(ids.Event), math.NaN()), issuedCursor(ids.New(ids.Event), map[string]any{"k": []any{1}}),
		issuedCursor(ids.New(ids.Session), time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC)),
		"", "kqCA000", "gqFpoA", "=", "////", strings.Repeat("k", 200), "\x00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		decoded, err := scalar.DecodeCursor(s)
		if err != nil {
			return
		}
		c := &decoded
		if _, err := EventPosition(&entgql.Cursor[string]{ID: c.ID, Value: c.Value}); err != nil {
			if ae, ok := apperr.As(err); !ok || ae.Kind != apperr.KindInvalid {
				t.Fatalf("EventPosition(%#v): %v is not a bad-input error", c, err)
			}
		}
		for _, cc := range cursorCases {
			got := &entgql.Cursor[string]{ID: c.ID, Value: c.Value}
			err := CheckCursor("after", got, cc.prefix, cc.order)
			if err != nil {
				if ae, ok := apperr.As(err); !ok || ae.Kind != apperr.KindInvalid || ae.Field != "after" {
					t.Fatalf("CheckCursor(%#v, %v): %v is not a bad-input error on after", c, cc, err)
				}
				continue
			}
			switch orderValues[cc.order] {
			case kindNone:
				if got.Value != nil {
					t.Fatalf("%v: accepted value %#v for an order by id", cc, got.Value)
				}
			case kindInt:
				if _, ok := got.Value.(int64); !ok {
					t.Fatalf("%v: accepted value %#v (%T), want an int64", cc, got.Value, got.Value)
				}
			case kindString:
				if _, ok := got.Value.(string); !ok {
					t.Fatalf("%v: accepted value %#v (%T), want a string", cc, got.Value, got.Value)
				}
			case kindTime:
				if _, ok := got.Value.(time.Time); !ok {
					t.Fatalf("%v: accepted value %#v (%T), want a time", cc, got.Value, got.Value)
				}
			}
			// What is accepted is what the API could issue: it round-trips.
			again, err := scalar.DecodeCursor(issuedCursor(got.ID, got.Value))
			if err != nil {
				t.Fatalf("%v: re-issued cursor of %#v does not decode: %v", cc, got, err)
			}
			if err := CheckCursor("after", &again, cc.prefix, cc.order); err != nil {
				t.Fatalf("%v: re-issued cursor of %#v refused: %v", cc, got, err)
			}
			if !sameCursorValue(again.Value, got.Value) || again.ID != got.ID {
				t.Fatalf("%v: %#v round-trips to %#v", cc, got, again)
			}
		}
	})
}

func sameCursorValue(a, b any) bool {
	if ta, ok := a.(time.Time); ok {
		tb, ok := b.(time.Time)
		return ok && ta.Equal(tb)
	}
	return a == b
}

// FuzzEventCursor: ParseEventCursor never panics, refuses with a bad-input error naming
// the field, and every position the API issues a cursor for reads back as itself.
func FuzzEventCursor(f *testing.F) {
	for _, n := range []int64{0, 1, 42, math.MaxInt64} {
		f.Add(EventCursor(n), n)
	}
	for _, s := range []string{"", "cG9zOi0x", "cG9zOg", "cG9zOjE=", "cG9zOisx", "cG9zOjAx", "%%%", "pos:1", strings.Repeat("A", 1000)} {
		f.Add(s, int64(-1))
	}
	f.Fuzz(func(t *testing.T, s string, n int64) {
		if n >= 0 {
			if got, err := ParseEventCursor("cursor", EventCursor(n)); err != nil || got != n {
				t.Fatalf("EventCursor(%d) reads back as %d, %v", n, got, err)
			}
		}
		got, err := ParseEventCursor("cursor", s)
		if err != nil {
			if ae, ok := apperr.As(err); !ok || ae.Kind != apperr.KindInvalid || ae.Field != "cursor" {
				t.Fatalf("ParseEventCursor(%q): %v is not a bad-input error on cursor", s, err)
			}
			return
		}
		if got < 0 {
			t.Fatalf("ParseEventCursor(%q) = %d, a negative position", s, got)
		}
		if again, err := ParseEventCursor("cursor", EventCursor(got)); err != nil || again != got {
			t.Fatalf("position %d from %q does not round-trip: %d, %v", got, s, again, err)
		}
	})
}

// FuzzEventTypes: the event type filter of the list, stream and subscriptions refuses
// unknown types with a bounded message, and what it accepts expands to known types only.
func FuzzEventTypes(f *testing.F) {
	for _, s := range []string{"trap.created", "", "threat.*", "*", strings.Repeat("x", 5000), "trap.created\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		types, err := EventTypes("types", strings.Split(s, ","))
		if err == nil {
			for _, typ := range types {
				if !slices.Contains(event.Types, typ) {
					t.Fatalf("EventTypes(%q) = %q, not an event type", s, typ)
				}
			}
			return
		}
		if ae, ok := apperr.As(err); !ok || ae.Kind != apperr.KindInvalid {
			t.Fatalf("EventTypes(%q): %v", s, err)
		}
		if len(err.Error()) > 600 {
			t.Fatalf("EventTypes: a message of %d bytes", len(err.Error()))
		}
	})
}
