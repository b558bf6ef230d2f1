// Package graph is Flytrap's GraphQL API: the resolvers behind /graphql, which
// the REST adapter calls too, so both APIs give the same answers.
package graph

import (
	"context"
	"time"

	"github.com/flytrap/flytrap/ent"
)

// Resolver is the root of the resolvers.
type Resolver struct {
	client *ent.Client
	now    func() time.Time
}

// NewResolver returns the root resolver over client; now is the clock (time.Now in production).
func NewResolver(client *ent.Client, now func() time.Time) *Resolver {
	if now == nil {
		now = time.Now
	}
	return &Resolver{client: client, now: now}
}

// ent returns the client of the transaction the operation runs in, if any, else the root client.
func (r *Resolver) ent(ctx context.Context) *ent.Client {
	if c := ent.FromContext(ctx); c != nil {
		return c
	}
	return r.client
}
