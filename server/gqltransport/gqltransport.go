// Package gqltransport is the API's GraphQL transport: gqlgen's executor built with our
// transports (HTTP without subscriptions; the WebSocket transport the server passes), the limits
// checked before any resolver runs (document size, depth, cost, page sizes), one transaction per
// mutation, and the one error presenter.
package gqltransport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"

	"entgo.io/contrib/entgql"
	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/graph"
	"github.com/flytrap/flytrap/server/httpx"
)

// Document limits beside --max-selections: a selection's name, arguments and
// punctuation stay well under 20 tokens, and pairs of fragments cost validation most.
const (
	maxTokensPerSelection = 20
	maxFragmentSpreads    = 100
)

// Page sizes of every connection (PageLimits).
const (
	DefaultPageSize = 50
	MaxPageSize     = 100
)

// Options are what the GraphQL handler is built from.
type Options struct {
	Schema    graphql.ExecutableSchema
	WebSocket graphql.Transport // the GraphQL-over-WebSocket transport; nil: none
	TxOpener  entgql.TxOpener   // each mutation runs in one of its transactions
	Log       *slog.Logger

	Limits
	Where       graph.WhereLimits // --where-max-*
	DetailBytes int               // --session-detail-bytes: a session detail's lists are priced by it
}

// New is the GraphQL handler: gqlgen's executor with our transports, document, depth and
// cost limits, one transaction per mutation, and one error presenter.
func New(o Options) *handler.Server {
	srv := handler.New(o.Schema)
	if o.WebSocket != nil {
		srv.AddTransport(o.WebSocket)
	}
	srv.AddTransport(transport.Options{})
	srv.AddTransport(noSubscriptions{transport.GET{}})
	srv.AddTransport(noSubscriptions{transport.POST{}})
	cache := lru.New[*ast.QueryDocument](1000)
	srv.SetQueryCache(cache)
	srv.SetParserTokenLimit(maxTokensPerSelection * o.MaxSelections)
	srv.Use(documentLimit{maxSelections: o.MaxSelections, maxSpreads: maxFragmentSpreads,
		maxTokens: maxTokensPerSelection * o.MaxSelections, cache: cache})
	if o.Introspection {
		srv.Use(extension.Introspection{})
	}
	srv.Use(depthLimit{max: o.DepthLimit}) // first: its message is the clearer one
	srv.Use(costLimit{max: o.ComplexityLimit, where: o.Where, listSizes: app.DetailListSizes(o.DetailBytes)})
	srv.Use(transactioner{entgql.Transactioner{TxOpener: o.TxOpener}, o.Log})
	// No AroundFields: plain scalar fields skip field middleware (graph.resolvePlain); a rule
	// for some fields is a directive, as @pageLimits is.
	srv.SetErrorPresenter(presenter(o.Log))
	srv.SetRecoverFunc(func(ctx context.Context, p any) error {
		o.Log.ErrorContext(ctx, "panic in resolver", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		return errors.New("internal error")
	})
	return srv
}

// Coded is a GraphQL error with an extensions code.
func Coded(msg, code string) *gqlerror.Error {
	return &gqlerror.Error{Message: msg, Extensions: map[string]any{"code": code}}
}

// transactioner runs each mutation in one transaction, committed when it succeeds and
// rolled back otherwise. It keeps entgql's serialisation of a mutation's fields but
// replaces its InterceptResponse, which panics on requests that have no operation (gqlgen
// could not decode them) and on a response handler's nil (asked again after its one
// response), and which shows the database's error text to the caller.
type transactioner struct {
	entgql.Transactioner
	log *slog.Logger
}

func (t transactioner) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	if !graphql.HasOperationContext(ctx) {
		return next(ctx)
	}
	if op := graphql.GetOperationContext(ctx).Operation; op == nil || op.Operation != ast.Mutation {
		return next(ctx)
	}
	txCtx, tx, err := t.OpenTx(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return &graphql.Response{Errors: gqlerror.List{Coded("the request ran out of time before its change could start", apperr.CodeTimeout)}}
		}
		t.log.ErrorContext(ctx, "opening a mutation's transaction", "err", err)
		return &graphql.Response{Errors: gqlerror.List{Coded("internal error: the change was not made", graph.CodeInternal)}}
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
	}()
	rsp := next(txCtx)
	if rsp == nil || len(rsp.Errors) > 0 {
		_ = tx.Rollback()
		if rsp == nil {
			return nil
		}
		return &graphql.Response{Errors: rsp.Errors}
	}
	if err := tx.Commit(); err != nil {
		if ctx.Err() != nil {
			return &graphql.Response{Errors: gqlerror.List{Coded("the request ran out of time; its change was not saved", apperr.CodeTimeout)}}
		}
		t.log.ErrorContext(ctx, "committing a mutation", "err", err)
		return &graphql.Response{Errors: gqlerror.List{Coded("internal error: the change was not saved", graph.CodeInternal)}}
	}
	return rsp
}

// PageLimits gives a connection a default page size and refuses pages over the maximum,
// which entgql does not do by itself. It is the @pageLimits directive, which every connection
// field carries (TestEveryConnectionHasPageLimits): a field middleware would run for every
// field of every row.
func PageLimits(ctx context.Context, _ any, next graphql.Resolver) (any, error) {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || fc.Args == nil {
		return next(ctx)
	}
	first, _ := fc.Args["first"].(*int)
	last, _ := fc.Args["last"].(*int)
	for _, a := range [...]struct {
		name string
		n    *int
	}{{"first", first}, {"last", last}} {
		if a.n != nil && (*a.n < 0 || *a.n > MaxPageSize) {
			return nil, apperr.Invalid(a.name, "must be between 0 and %d", MaxPageSize)
		}
	}
	if first == nil && last == nil {
		n := DefaultPageSize
		fc.Args["first"] = &n
	}
	return next(ctx)
}

// depthLimit refuses operations nested deeper than max.
type depthLimit struct{ max int }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = depthLimit{}

func (depthLimit) ExtensionName() string                   { return "DepthLimit" }
func (depthLimit) Validate(graphql.ExecutableSchema) error { return nil }
func (d depthLimit) MutateOperationContext(_ context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	if oc.Operation == nil {
		return nil
	}
	if depth := selectionDepth(oc.Operation.SelectionSet, 0, 0); depth > d.max {
		err := gqlerror.Errorf("the operation is nested %d levels deep; at most %d are allowed", depth, d.max)
		err.Extensions = map[string]any{"code": graph.CodeBadUserInput}
		return err
	}
	return nil
}

func selectionDepth(set ast.SelectionSet, depth, fragments int) int {
	if fragments > 20 {
		return depth // fragment cycles are refused by validation; this bounds the walk anyway
	}
	deepest := depth
	for _, sel := range set {
		var d int
		switch sel := sel.(type) {
		case *ast.Field:
			if strings.HasPrefix(sel.Name, "__") {
				continue // introspection is bounded by the schema, and its standard query is deep
			}
			if len(sel.SelectionSet) == 0 {
				d = depth + 1
			} else {
				d = selectionDepth(sel.SelectionSet, depth+1, fragments)
			}
		case *ast.InlineFragment:
			d = selectionDepth(sel.SelectionSet, depth, fragments)
		case *ast.FragmentSpread:
			if sel.Definition != nil {
				d = selectionDepth(sel.Definition.SelectionSet, depth, fragments+1)
			}
		}
		deepest = max(deepest, d)
	}
	return deepest
}

// present gives every error a code and a message safe to show; causes the
// caller cannot act on are logged and shown as "internal error". graph.Present says
// what an error is, apperr its code; fields are spelled as the schema spells them.
func presenter(log *slog.Logger) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error { return present(ctx, err, log) }
}

func present(ctx context.Context, err error, log *slog.Logger) *gqlerror.Error {
	gqlErr := graphql.DefaultErrorPresenter(ctx, err)
	cause := err
	if ge := (*gqlerror.Error)(nil); errors.As(err, &ge) && ge.Unwrap() != nil {
		cause = ge.Unwrap() // gqlgen's wrapper adds the position to the text; the path says it already
	}
	e := graph.Present(cause)
	if e.Kind == apperr.KindTimeout {
		httpx.MarkTimedOut(ctx) // the database ended a statement at its limit: answered as at the deadline
	}
	code, msg, field := e.Code(), e.Message(graph.GraphQLName), ""
	if e.Field != "" {
		field = graph.GraphQLName(e.Field)
	}
	if e.Kind == apperr.KindInternal {
		var ge *gqlerror.Error
		if errors.As(err, &ge) && ge.Unwrap() == nil {
			// gqlgen's own parse and validation errors.
			if gqlErr.Extensions == nil || gqlErr.Extensions["code"] == nil {
				gqlErr.Extensions = map[string]any{"code": graph.CodeBadUserInput}
			}
			if name := inputFieldAt(ctx, gqlErr); name != "" {
				gqlErr.Message = name + ": " + gqlErr.Message
				gqlErr.Extensions["field"] = name
			}
			return gqlErr
		}
		if fc := graphql.GetFieldContext(ctx); fc != nil && fc.Args == nil && fc.Field.Field != nil && len(fc.Field.Arguments) > 0 {
			// The field's arguments could not be read (a malformed cursor, a number for a string):
			// gqlgen reports them as untyped errors, "input: " and the decoder's words.
			code, msg = graph.CodeBadUserInput, strings.TrimPrefix(err.Error(), "input: ")
			if strings.Contains(msg, "cannot decode cursor") {
				msg = "is not a cursor this API issued"
			}
			if n := len(gqlErr.Path); n > 0 {
				if name, ok := gqlErr.Path[n-1].(ast.PathName); ok {
					field = string(name)
					if !strings.HasPrefix(msg, gqlErr.Path.String()) {
						msg = field + ": " + msg
					}
				}
			}
		} else {
			log.ErrorContext(ctx, "graphql resolver failed", "err", err)
		}
	}
	gqlErr.Message = msg
	gqlErr.Extensions = map[string]any{"code": code}
	if field != "" {
		gqlErr.Extensions["field"] = field
	}
	if wait := apperr.RetryAfterSeconds(cause); wait > 0 {
		gqlErr.Extensions["retryAfter"] = wait // seconds, as HTTP's Retry-After
	}
	return gqlErr
}
