package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/graph"
	"github.com/flytrap/flytrap/server/auth"
	"github.com/flytrap/flytrap/server/gqltransport"
	"github.com/flytrap/flytrap/viewer"
)

// Page sizes of every connection (gqltransport.PageLimits).
const (
	DefaultPageSize = gqltransport.DefaultPageSize
	MaxPageSize     = gqltransport.MaxPageSize
)

// GraphQL error codes (extensions.code), as apperr assigns them.
const (
	CodeUnauthenticated = graph.CodeUnauthenticated
	CodeForbidden       = graph.CodeForbidden
	CodeBadUserInput    = graph.CodeBadUserInput
	CodeNotFound        = graph.CodeNotFound
	CodeConflict        = graph.CodeConflict
	CodeInternal        = graph.CodeInternal
	CodeRateLimited     = graph.CodeRateLimited
	CodeTimeout         = apperr.CodeTimeout // a request that ran past the server-side deadline
)

// websocketAuth authenticates a WebSocket by connection_init's Authorization, or by
// the upgrade request's header that the HTTP middleware already checked. A refusal
// comes with the close code to end the connection with.
func (s *Server) websocketAuth(ctx context.Context, header string) (context.Context, int, error) {
	if header == "" {
		if _, ok := viewer.FromContext(ctx); ok {
			return ctx, 0, nil
		}
	}
	v, err := s.auth.Authenticate(ctx, header)
	if err != nil {
		if !errors.Is(err, auth.ErrUnauthenticated) {
			s.log.ErrorContext(ctx, "websocket authentication", "err", err)
			return ctx, closeInternal, errors.New("internal error")
		}
		return ctx, closeUnauthorized, errors.New("unauthorized")
	}
	return viewer.NewContext(ctx, v), 0, nil
}

// graphQLHandler is the GraphQL transport over this instance's resolver, database and settings.
func (s *Server) graphQLHandler() http.Handler {
	return gqltransport.New(gqltransport.Options{
		Schema: graph.NewExecutableSchema(graph.Config{Resolvers: s.resolver,
			Directives: graph.DirectiveRoot{PageLimits: gqltransport.PageLimits}}),
		WebSocket:   s.ws,
		TxOpener:    s.db.Client,
		Log:         s.log,
		Limits:      s.cfg.Limits,
		Where:       s.cfg.Where,
		DetailBytes: s.cfg.SessionDetailBytes,
	})
}
