// Package viewer carries the authenticated caller (organization and scope)
// through a request's context, so storage rules can scope every read and
// write to the caller's organization in one place.
package viewer

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Scope is what a token may do. Scopes are ordered: each includes the ones below it.
type Scope string

const (
	ReadOnly  Scope = "READ_ONLY"
	ReadWrite Scope = "READ_WRITE"
	Admin     Scope = "ADMIN"
)

// Values lists the scopes in ascending order; ent uses it for the enum column.
func (Scope) Values() []string {
	return []string{string(ReadOnly), string(ReadWrite), string(Admin)}
}

func (s Scope) rank() int {
	switch s {
	case ReadOnly:
		return 1
	case ReadWrite:
		return 2
	case Admin:
		return 3
	}
	return 0
}

// Valid reports whether s is one of the three scopes.
func (s Scope) Valid() bool { return s.rank() > 0 }

// Includes reports whether s grants at least what need requires.
func (s Scope) Includes(need Scope) bool { return s.Valid() && s.rank() >= need.rank() }

// Human is the spelling of the API document and the command line: read-only, read-write, admin.
func (s Scope) Human() string { return strings.ReplaceAll(strings.ToLower(string(s)), "_", "-") }

// ParseScope accepts both the document's spelling (read-only) and the GraphQL one (READ_ONLY).
func ParseScope(v string) (Scope, error) {
	s := Scope(strings.ReplaceAll(strings.ToUpper(strings.TrimSpace(v)), "-", "_"))
	if !s.Valid() {
		return "", fmt.Errorf("unknown scope %q (want read-only, read-write or admin)", v)
	}
	return s, nil
}

// MarshalGQL writes the GraphQL enum value.
func (s Scope) MarshalGQL(w io.Writer) { _, _ = io.WriteString(w, strconv.Quote(string(s))) }

// UnmarshalGQL reads the GraphQL enum value.
func (s *Scope) UnmarshalGQL(v any) error {
	str, ok := v.(string)
	if !ok {
		return fmt.Errorf("scope must be a string")
	}
	sc := Scope(str)
	if !sc.Valid() {
		return fmt.Errorf("%q is not a valid ApiKeyScope", str)
	}
	*s = sc
	return nil
}

// Viewer is the authenticated caller.
type Viewer struct {
	OrgID   string
	Scope   Scope
	KeyID   string // set when authenticated with an API key
	Subject string // set when authenticated with a JWT
	// Expires is when the credential stops being valid (a JWT's exp, an API key's expiry);
	// zero for API keys without one, which last until revoked.
	Expires time.Time
	// SiteID, set for a deploy key, is the one site whose traps it may read and write; it
	// may do nothing else.
	SiteID string
}

// SiteScoped reports whether the caller is a deploy key, limited to one site's traps.
func (v Viewer) SiteScoped() bool { return v.SiteID != "" }

// Expired reports whether the credential has expired at now.
func (v Viewer) Expired(now time.Time) bool { return !v.Expires.IsZero() && !now.Before(v.Expires) }

type ctxKey struct{}

// NewContext returns ctx carrying v.
func NewContext(ctx context.Context, v Viewer) context.Context {
	return context.WithValue(ctx, ctxKey{}, v)
}

// FromContext returns the viewer in ctx, if any.
func FromContext(ctx context.Context) (Viewer, bool) {
	v, ok := ctx.Value(ctxKey{}).(Viewer)
	return v, ok
}
