// Package apperr holds the errors of the service's own rules, which every API maps
// to its status and code: a bad input names its field, a conflict says what clashed.
package apperr

import (
	"errors"
	"fmt"
)

// Kind classifies an error for the APIs.
type Kind int

const (
	KindInvalid  Kind = iota + 1 // 400, BAD_USER_INPUT
	KindNotFound                 // 404, NOT_FOUND
	KindConflict                 // 409, CONFLICT
	KindTooMany                  // 429, RATE_LIMITED
)

// Error is an error of a known kind with a message safe to show the caller.
type Error struct {
	Kind  Kind
	Field string // set for KindInvalid when one field is at fault
	Msg   string
}

func (e *Error) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Msg
	}
	return e.Msg
}

// Invalid reports a bad value of field.
func Invalid(field, format string, a ...any) error {
	return &Error{Kind: KindInvalid, Field: field, Msg: fmt.Sprintf(format, a...)}
}

// NotFound reports a missing resource.
func NotFound(what string) error {
	return &Error{Kind: KindNotFound, Msg: what + " not found"}
}

// Conflict reports a clash with existing state.
func Conflict(format string, a ...any) error {
	return &Error{Kind: KindConflict, Msg: fmt.Sprintf(format, a...)}
}

// TooMany reports a limit reached; the caller may try again later.
func TooMany(format string, a ...any) error {
	return &Error{Kind: KindTooMany, Msg: fmt.Sprintf(format, a...)}
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
