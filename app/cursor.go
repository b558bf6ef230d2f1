package app

import (
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"entgo.io/contrib/entgql"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ids"
)

// valueKind is the type of the value a cursor carries for an order field.
type valueKind int

const (
	kindNone   valueKind = iota // ordered by id: the cursor is the id alone
	kindInt                     // int fields: msgpack may shrink them to int8…uint64
	kindString                  // string and enum fields
	kindTime                    // time fields
)

// orderValues maps every order field of the schema (its GraphQL name) to the type of
// its cursor values; a test checks it against the schema's *OrderField enums.
var orderValues = map[string]valueKind{
	"":            kindNone,
	"POSITION":    kindInt,
	"SCORE":       kindInt,
	"HIT_COUNT":   kindInt,
	"NAME":        kindString,
	"PATH":        kindString,
	"TYPE":        kindString,
	"URL":         kindString,
	"CREATED_AT":  kindTime,
	"UPDATED_AT":  kindTime,
	"FIRST_SEEN":  kindTime,
	"LAST_SEEN":   kindTime,
	"RECEIVED_AT": kindTime,
}

// CheckCursor refuses a cursor that this API could not have issued for a connection of
// nodes with id prefix ordered by order (a GraphQL order field name, "" for by id), and
// normalises its value to the type of the order field. A cursor is base64 of msgpack:
// the caller can put any value in it, and ent hands that value to the database as it
// is, where a map, a uint64 above int64, a year 300000 or a string compared with a
// timestamp are database errors (a 500) rather than the caller's mistake.
func CheckCursor(field string, c *entgql.Cursor[string], prefix, order string) error {
	if c == nil {
		return nil
	}
	bad := apperr.Invalid(field, "is not a cursor this API issued for this list and order")
	kind, known := orderValues[order]
	if !known || ids.Prefix(c.ID) != prefix {
		return bad
	}
	switch v := c.Value.(type) {
	case nil:
		// entgql issues a zero value (a score of 0) as no value at all (msgpack omitempty).
		switch kind {
		case kindInt:
			c.Value = int64(0)
		case kindString:
			c.Value = ""
		case kindTime:
			return bad // no row has a zero time
		}
	case string:
		if kind != kindString || !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
			return bad
		}
	case time.Time:
		if kind != kindTime || v.Year() < 1 || v.Year() > 9999 {
			return bad
		}
	default:
		n, isInt := cursorInt(v)
		if kind != kindInt || !isInt {
			return bad
		}
		c.Value = n
	}
	return nil
}

// CheckCursors checks a connection's after and before cursors.
func CheckCursors(after, before *entgql.Cursor[string], prefix, order string) error {
	if err := CheckCursor("after", after, prefix, order); err != nil {
		return err
	}
	return CheckCursor("before", before, prefix, order)
}

// cursorInt reads an integer of any size msgpack decodes to, if it fits an int64.
func cursorInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case int:
		return int64(n), true
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint64:
		if n > math.MaxInt64 {
			return 0, false
		}
		return int64(n), true
	case uint:
		if uint64(n) > math.MaxInt64 {
			return 0, false
		}
		return int64(n), true
	}
	return 0, false
}
