package gqltransport

import (
	"context"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/flytrap/flytrap/graph"
)

// msgSubscriptionOverHTTP is the refusal of a subscription sent over plain HTTP.
const msgSubscriptionOverHTTP = "subscriptions need a WebSocket (graphql-transport-ws or graphql-ws on /graphql); over HTTP, follow the events with GET /api/v1/events/stream"

// noSubscriptions is gqlgen's GET or POST transport refusing subscription operations at
// once with 400 / BAD_USER_INPUT, before any resolver: a subscription over POST used to
// take one of its organization's stream slots and wait for an event that its one
// response could carry, until the request deadline answered 503.
type noSubscriptions struct{ graphql.Transport }

func (t noSubscriptions) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	sw := &refusalStatus{ResponseWriter: w}
	t.Transport.Do(sw, r, subscriptionRefuser{GraphExecutor: exec, refused: &sw.refused})
}

// subscriptionRefuser fails the operation context of a subscription.
type subscriptionRefuser struct {
	graphql.GraphExecutor
	refused *bool
}

func (e subscriptionRefuser) CreateOperationContext(ctx context.Context, params *graphql.RawParams) (*graphql.OperationContext, gqlerror.List) {
	oc, errs := e.GraphExecutor.CreateOperationContext(ctx, params)
	if errs == nil && oc != nil && oc.Operation != nil && oc.Operation.Operation == ast.Subscription {
		*e.refused = true
		return oc, gqlerror.List{Coded(msgSubscriptionOverHTTP, graph.CodeBadUserInput)}
	}
	return oc, errs
}

// refusalStatus turns the transport's status into 400 for a refused subscription (gqlgen
// answers an operation it did not start 200, or 422 for its own protocol errors).
type refusalStatus struct {
	http.ResponseWriter
	refused bool
}

func (w *refusalStatus) WriteHeader(status int) {
	if w.refused {
		status = http.StatusBadRequest
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *refusalStatus) Unwrap() http.ResponseWriter { return w.ResponseWriter }
