package server

import (
	"net/http"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/graph"
	"github.com/flytrap/flytrap/server/gqltransport"
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

// newWebSocket is the GraphQL-over-WebSocket transport over this instance's authentication,
// rate limits, slots and settings.
func (s *Server) newWebSocket() *gqltransport.WebSocket {
	return gqltransport.NewWebSocket(gqltransport.WebSocketOptions{
		Authenticate:   s.auth.Authenticate,
		Admit:          s.admitOperation,
		AuthFailed:     s.fails.FailedFrom,
		Gate:           s.gate,
		Slots:          s.slots,
		Log:            s.log,
		AllowedOrigins: s.cfg.AllowedOrigins,
		MaxOperations:  s.cfg.WebsocketMaxOperations,
		ReadLimit:      s.cfg.MaxBodyBytes,
		KeepAlive:      s.cfg.StreamHeartbeat,
	})
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
