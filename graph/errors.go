package graph

import (
	"context"
	"errors"
	"strings"

	"github.com/lib/pq"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/privacy"
)

// Error codes (GraphQL extensions.code); the REST adapter maps them to HTTP statuses.
const (
	CodeUnauthenticated = "UNAUTHENTICATED"
	CodeForbidden       = "FORBIDDEN"
	CodeBadUserInput    = "BAD_USER_INPUT"
	CodeNotFound        = "NOT_FOUND"
	CodeConflict        = "CONFLICT"
	CodeInternal        = "INTERNAL"
	CodeRateLimited     = "RATE_LIMITED"
)

// ErrUnauthenticated is wrapped by every authentication failure.
var ErrUnauthenticated = errors.New("unauthenticated")

// Classify maps an error to its GraphQL code, a message safe to show, and the input field at fault.
// The REST adapter maps the same codes to HTTP statuses.
func Classify(err error) (code, msg, field string) {
	var ve *ent.ValidationError
	var nf *ent.NotFoundError
	switch ae, ok := apperr.As(err); {
	case ok:
		switch ae.Kind {
		case apperr.KindInvalid:
			return CodeBadUserInput, ae.Error(), ae.Field
		case apperr.KindNotFound:
			return CodeNotFound, ae.Error(), ""
		case apperr.KindConflict:
			return CodeConflict, ae.Error(), ""
		case apperr.KindTooMany:
			return CodeRateLimited, ae.Error(), ""
		}
	case errors.Is(err, ErrUnauthenticated):
		return CodeUnauthenticated, err.Error(), ""
	case errors.Is(err, privacy.Deny):
		return CodeForbidden, denyMessage(err), ""
	case errors.As(err, &nf):
		return CodeNotFound, strings.TrimPrefix(nf.Error(), "ent: "), ""
	case errors.As(err, &ve):
		name := graphqlName(ve.Name)
		return CodeBadUserInput, name + ": " + validationReason(ve), name
	case isBadText(err):
		return CodeBadUserInput, "text must be valid UTF-8 without NUL characters", ""
	case ent.IsConstraintError(err):
		return CodeConflict, "conflicts with an existing record (for a trap: an active trap already has this path on this site)", ""
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return CodeInternal, "the request was cancelled or took too long", ""
	}
	return CodeInternal, "internal error", ""
}

// isBadText reports PostgreSQL refusing text it cannot store (a NUL byte, invalid UTF-8)
// that reached a statement, e.g. inside a filter: the caller's input, not our failure.
func isBadText(err error) bool {
	var pqErr *pq.Error
	return errors.As(err, &pqErr) && (pqErr.Code == "22021" || pqErr.Code == "22P05")
}

func denyMessage(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ": ent/privacy"); i > 0 {
		msg = msg[:i]
	}
	if strings.HasPrefix(msg, "ent/privacy") {
		return "forbidden"
	}
	return msg
}

func validationReason(ve *ent.ValidationError) string {
	msg := ve.Error()
	switch {
	case strings.Contains(msg, "less than the required length"):
		return "must not be empty"
	case strings.Contains(msg, "greater than the required length"):
		return "is too long"
	case strings.Contains(msg, "invalid enum value"):
		return "is not an allowed value"
	case strings.Contains(msg, "missing required field"):
		return "is required"
	}
	if _, reason, ok := strings.Cut(msg, ": "); ok {
		if _, r2, ok := strings.Cut(reason, ": "); ok {
			return r2
		}
		return reason
	}
	return "is invalid"
}

// graphqlName turns an ent field name (site_id) into its GraphQL spelling (siteID).
func graphqlName(name string) string {
	parts := strings.Split(name, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] == "id" || parts[i] == "ip" {
			parts[i] = strings.ToUpper(parts[i])
		} else if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}
