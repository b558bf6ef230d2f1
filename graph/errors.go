package graph

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/lib/pq"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/privacy"
)

// Error codes (GraphQL extensions.code); apperr owns them and their HTTP statuses.
const (
	CodeUnauthenticated = apperr.CodeUnauthenticated
	CodeForbidden       = apperr.CodeForbidden
	CodeBadUserInput    = apperr.CodeBadUserInput
	CodeNotFound        = apperr.CodeNotFound
	CodeConflict        = apperr.CodeConflict
	CodeInternal        = apperr.CodeInternal
	CodeRateLimited     = apperr.CodeRateLimited
)

// ErrUnauthenticated is wrapped by every authentication failure.
var ErrUnauthenticated = app.ErrUnauthenticated

// Present is the one translation of a resolver's error into what an API may show: the
// service's own *apperr.Error as it is, the storage layer's errors by their types. Its
// Kind gives the HTTP status and GraphQL code; a KindInternal's cause is the caller's to log.
func Present(err error) *apperr.Error {
	var ve *ent.ValidationError
	var nf *ent.NotFoundError
	if ae, ok := apperr.As(err); ok && ae.Kind != 0 {
		return ae
	}
	switch {
	case errors.Is(err, ErrUnauthenticated):
		return &apperr.Error{Kind: apperr.KindUnauthenticated, Msg: err.Error()}
	case errors.Is(err, privacy.Deny):
		return &apperr.Error{Kind: apperr.KindForbidden, Msg: denyMessage(err)}
	case errors.As(err, &nf):
		// ent's label ("trap") is only in its text: "ent: trap not found".
		return &apperr.Error{Kind: apperr.KindNotFound, Msg: strings.TrimPrefix(nf.Error(), "ent: ")}
	case errors.As(err, &ve):
		return &apperr.Error{Kind: apperr.KindInvalid, Field: ve.Name, Msg: validationReason(ve)}
	case isBadText(err):
		return &apperr.Error{Kind: apperr.KindInvalid, Msg: "text must be valid UTF-8 without NUL characters"}
	case ent.IsConstraintError(err):
		return &apperr.Error{Kind: apperr.KindConflict,
			Msg: "conflicts with an existing record (for a trap: an active trap already has this path on this site)"}
	case isStatementTimeout(err):
		return apperr.New(apperr.KindTimeout, "a database statement of the request ran past its time limit (request-timeout less a tenth); if it changes data, check its effect before retrying")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return apperr.Internal("the request was cancelled or took too long")
	}
	return apperr.Internal("internal error")
}

// isStatementTimeout reports PostgreSQL ending a statement at the API pool's
// statement_timeout (store.Options.StatementTimeout): the request ran out of time.
func isStatementTimeout(err error) bool {
	var pqErr *pq.Error
	return errors.As(err, &pqErr) && pqErr.Code == "57014"
}

// isBadText reports PostgreSQL refusing text it cannot store (a NUL byte, invalid UTF-8)
// that reached a statement, e.g. inside a filter: the caller's input, not our failure.
func isBadText(err error) bool {
	var pqErr *pq.Error
	return errors.As(err, &pqErr) && (pqErr.Code == "22021" || pqErr.Code == "22P05")
}

// denyMessage is the reason a privacy rule gave: privacy.Denyf keeps it only as the
// text before ": ent/privacy deny".
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

// validationReason words ent's validation failure for people. ent's built-in validators
// (NotEmpty, MaxLen, enums, required fields) return untyped errors, so their text is the
// only way to tell them apart; the schema's own validators' reasons are shown as they are.
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
	// ent wraps a validator's error as `ent: validator failed for field "T.f": %w`.
	var reason error
	for e := errors.Unwrap(ve); e != nil; e = errors.Unwrap(e) {
		reason = e
	}
	if reason == nil || reason.Error() == "" {
		return "is invalid"
	}
	return reason.Error()
}

// GraphQLName spells an input's name as the GraphQL schema does (site_id → siteID): the
// names of every input field and argument, matched without case and underscores. A name
// the schema does not know is kept as it is.
func GraphQLName(name string) string {
	if n, ok := graphQLNames()[FieldKey(name)]; ok {
		return n
	}
	return name
}

// FieldKey is how the APIs match one input's spellings: siteID, site_id and SiteId are one key.
func FieldKey(name string) string { return strings.ToLower(strings.ReplaceAll(name, "_", "")) }

var graphQLNames = sync.OnceValue(func() map[string]string {
	names := map[string]string{}
	for _, name := range inputNames(NewExecutableSchema(Config{}).Schema()) {
		names[FieldKey(name)] = name
	}
	return names
})

// inputNames lists the names a caller gives values to: input fields and arguments.
func inputNames(s *ast.Schema) []string {
	var out []string
	for name, def := range s.Types {
		if strings.HasPrefix(name, "__") {
			continue
		}
		for _, f := range def.Fields {
			if def.Kind == ast.InputObject {
				out = append(out, f.Name)
			}
			for _, a := range f.Arguments {
				out = append(out, a.Name)
			}
		}
	}
	return out
}

// EnumValues are the values of the schema's enum typ, in the schema's order and spelling.
func EnumValues(typ string) []string {
	def := NewExecutableSchema(Config{}).Schema().Types[typ]
	if def == nil || def.Kind != ast.Enum {
		panic("graph: no enum " + typ) // a programming error, caught by any test of the caller
	}
	out := make([]string, len(def.EnumValues))
	for i, v := range def.EnumValues {
		out[i] = v.Name
	}
	return out
}
