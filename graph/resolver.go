// Package graph is Flytrap's GraphQL API: the resolvers behind /graphql. Each is an adapter
// over the application layer (app): it passes its arguments to a use case and returns what it
// gives. GraphQL's own generic connections (traps, sites, API keys, events: entgql's where,
// order and cursors) are paginated here, since that pagination is the use case; everything
// the REST API shares (sessions, session detail, figures, events, webhooks) is app's.
package graph

import (
	"context"
	"log/slog"
	"time"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/ent"
)

// Resolver is the root of the resolvers.
type Resolver struct {
	app    *app.App
	client *ent.Client
	logger *slog.Logger

	// CredentialCheck is how often a subscription re-checks its credential (revoked key,
	// expired JWT) on its own, besides the broker's immediate end on a revocation made on
	// this instance or announced by NOTIFY: the server sets it to --stream-heartbeat, the
	// SSE stream's interval (15s when unset).
	CredentialCheck time.Duration

	// Previewer renders trapPreview; the server sets it once the trap engine exists.
	Previewer Previewer
	// TokenKey is the installation's token key, for lureSnippet; set with Previewer.
	TokenKey func() decoy.Key
	// Storage measures the database for admins (the storage field); the server sets it.
	Storage StorageReport
}

// NewResolver returns the root resolver over the application.
func NewResolver(a *app.App, logger *slog.Logger) *Resolver {
	if logger == nil {
		logger = slog.Default()
	}
	return &Resolver{app: a, client: a.Client(), logger: logger}
}

func (r *Resolver) log(ctx context.Context, msg string, err error) {
	r.logger.WarnContext(ctx, msg, "err", err)
}

// ent returns the client of the transaction the operation runs in, if any, else the root client.
func (r *Resolver) ent(ctx context.Context) *ent.Client {
	return app.Ent(ctx, r.client)
}
