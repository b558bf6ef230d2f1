// Package graph is Flytrap's GraphQL API: the resolvers behind /graphql, which
// the REST adapter calls too, so both APIs give the same answers.
package graph

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/flytrap/flytrap/decoy"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/event"
)

// Resolver is the root of the resolvers.
type Resolver struct {
	client *ent.Client
	broker *event.Broker
	logger *slog.Logger
	now    func() time.Time

	streams streamSlots
	open    sync.Map // Follow.Kind → *atomic.Int64: live readers, for metrics
	// CredentialCheck is how often a subscription re-checks its credential (revoked key,
	// expired JWT) on its own, besides the broker's immediate end on a revocation made on
	// this instance or announced by NOTIFY: the server sets it to --stream-heartbeat, the
	// SSE stream's interval (15s when unset).
	CredentialCheck time.Duration

	// Previewer renders trapPreview; the server sets it once the trap engine exists.
	Previewer Previewer
	// TokenKey is the installation's token key, for lureSnippet; set with Previewer.
	TokenKey func() decoy.Key
	// Manual limits the deliveries callers ask for per endpoint (pings, redeliveries).
	Manual ManualLimit
	// DetailLimit bounds each list of a session's detail (1 to MaxDetailLimit).
	DetailLimit int
	// DetailBytes bounds the stored bytes of each list of a session's detail (MinDetailBytes
	// to MaxDetailBytes; else DefaultDetailBytes).
	DetailBytes int
	// Where bounds the filters the REST adapter builds, as the complexity limit bounds GraphQL's.
	Where WhereLimits
	// Storage measures the database for admins (the storage field); the server sets it.
	Storage StorageReport
}

// NewResolver returns the root resolver over client; broker feeds live delivery;
// now is the clock (time.Now in production).
func NewResolver(client *ent.Client, broker *event.Broker, logger *slog.Logger, now func() time.Time) *Resolver {
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Resolver{client: client, broker: broker, logger: logger, now: now, Manual: DefaultManualLimit, DetailLimit: DefaultDetailLimit,
		DetailBytes: DefaultDetailBytes, Where: DefaultWhereLimits}
}

func (r *Resolver) log(ctx context.Context, msg string, err error) {
	r.logger.WarnContext(ctx, msg, "err", err)
}

// ent returns the client of the transaction the operation runs in, if any, else the root client.
func (r *Resolver) ent(ctx context.Context) *ent.Client {
	if c := ent.FromContext(ctx); c != nil {
		return c
	}
	return r.client
}
