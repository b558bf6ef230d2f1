// Package apperr holds the errors of the service's own rules and owns how every API
// reports them: an error's Kind fixes its HTTP status and its GraphQL code, so the REST
// writer, the GraphQL presenter and the WebSocket transport cannot disagree. A bad input
// names its field, a conflict says what clashed.
package apperr

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Kind classifies an error for the APIs; Status and Code say how each API reports it.
type Kind int

const (
	KindInvalid         Kind = iota + 1 // 400, BAD_USER_INPUT
	KindNotFound                        // 404, NOT_FOUND
	KindConflict                        // 409, CONFLICT
	KindTooMany                         // 429, RATE_LIMITED
	KindUnauthenticated                 // 401, UNAUTHENTICATED
	KindForbidden                       // 403, FORBIDDEN
	KindInternal                        // 500, INTERNAL: the cause is logged, never shown
	KindTooLarge                        // 413, BAD_USER_INPUT: a body over the limit
	KindMethod                          // 405, BAD_USER_INPUT: a method the route does not take
	KindTimeout                         // 503, TIMEOUT: past the request's server-side deadline
	KindGone                            // 410, CURSOR_EXPIRED: a cursor into rows retention deleted
)

// GraphQL error codes (extensions.code).
const (
	CodeUnauthenticated = "UNAUTHENTICATED"
	CodeForbidden       = "FORBIDDEN"
	CodeBadUserInput    = "BAD_USER_INPUT"
	CodeNotFound        = "NOT_FOUND"
	CodeConflict        = "CONFLICT"
	CodeInternal        = "INTERNAL"
	CodeRateLimited     = "RATE_LIMITED"
	CodeTimeout         = "TIMEOUT"
	CodeCursorExpired   = "CURSOR_EXPIRED"
)

// kinds is the one table of kind → HTTP status → GraphQL code.
var kinds = map[Kind]struct {
	status int
	code   string
}{
	KindInvalid:         {http.StatusBadRequest, CodeBadUserInput},
	KindNotFound:        {http.StatusNotFound, CodeNotFound},
	KindConflict:        {http.StatusConflict, CodeConflict},
	KindTooMany:         {http.StatusTooManyRequests, CodeRateLimited},
	KindUnauthenticated: {http.StatusUnauthorized, CodeUnauthenticated},
	KindForbidden:       {http.StatusForbidden, CodeForbidden},
	KindInternal:        {http.StatusInternalServerError, CodeInternal},
	KindTooLarge:        {http.StatusRequestEntityTooLarge, CodeBadUserInput},
	KindMethod:          {http.StatusMethodNotAllowed, CodeBadUserInput},
	KindTimeout:         {http.StatusServiceUnavailable, CodeTimeout},
	KindGone:            {http.StatusGone, CodeCursorExpired},
}

// Status is the HTTP status of errors of kind k; an unknown kind is internal.
func (k Kind) Status() int {
	if e, ok := kinds[k]; ok {
		return e.status
	}
	return http.StatusInternalServerError
}

// Code is the GraphQL extensions.code of errors of kind k; an unknown kind is internal.
func (k Kind) Code() string {
	if e, ok := kinds[k]; ok {
		return e.code
	}
	return CodeInternal
}

// Error is an error of a known kind with a message safe to show the caller.
type Error struct {
	Kind Kind
	// Field, for KindInvalid, is the input at fault as its source named it (site_id or
	// siteID): each API spells it its own way when it writes the message (see Message).
	Field string
	Msg   string
	// ConflictID, for KindConflict, is the id of the record in the way (the trap holding
	// the path), when known: REST's error body carries it as conflict_id.
	ConflictID string
	// RetryAfter, for KindTooMany, is how long until a retry can succeed (Retry-After).
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Message(nil) }

// Message is the text shown to the caller: "field: msg" with the field spelled by spell
// (nil: as given), or msg alone.
func (e *Error) Message(spell func(string) string) string {
	if e.Field == "" {
		return e.Msg
	}
	if spell == nil {
		return e.Field + ": " + e.Msg
	}
	return spell(e.Field) + ": " + e.Msg
}

// Status is e's HTTP status.
func (e *Error) Status() int { return e.Kind.Status() }

// Code is e's GraphQL code.
func (e *Error) Code() string { return e.Kind.Code() }

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

// New is an error of kind k with message msg.
func New(k Kind, msg string) *Error { return &Error{Kind: k, Msg: msg} }

// Internal is the error shown for a failure the caller cannot act on; its cause is logged.
func Internal(msg string) *Error { return &Error{Kind: KindInternal, Msg: msg} }

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
