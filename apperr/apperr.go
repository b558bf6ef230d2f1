// Package apperr holds the errors of the service's own rules, which every API maps
// to its status and code: a bad input names its field, a conflict says what clashed.
package apperr

import (
	"errors"
	"fmt"
	"time"
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
	// RetryAfter, for KindTooMany, is how long until a retry can succeed (Retry-After).
	RetryAfter time.Duration
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

// TooManyFor reports a limit reached that frees up after wait.
func TooManyFor(wait time.Duration, format string, a ...any) error {
	return &Error{Kind: KindTooMany, Msg: fmt.Sprintf(format, a...), RetryAfter: wait}
}

// RetryAfterSeconds is err's wait in whole seconds (at least 1), or 0 if it names none.
func RetryAfterSeconds(err error) int {
	if e, ok := As(err); ok && e.RetryAfter > 0 {
		return int(max(1, (e.RetryAfter+time.Second-1)/time.Second))
	}
	return 0
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
