// Package app is Flytrap's application layer: the named use cases both APIs call (list the
// traps, a page of sessions under a filter, a session's detail, the figures, the event log and
// its live followers, webhook endpoints and their deliveries), taking and returning domain
// types (filters, pages, inputs, ent's entities). The GraphQL resolvers (graph/) and the REST
// handlers (rest/) are adapters over it: they translate their request into a call here and the
// result into their shape, and hold no query logic of their own. Errors are apperr kinds (or
// ent's, which graph.Present maps); nothing here knows GraphQL or HTTP.
package app

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/webhook"
)

// App holds what the use cases share: the database, the event broker, the clock and the
// settings the server gives them.
type App struct {
	client *ent.Client
	broker *event.Broker
	now    func() time.Time

	streams streamSlots
	open    sync.Map // Follow.Kind → *atomic.Int64: live readers, for metrics

	// Manual limits the deliveries callers ask for per endpoint (pings, redeliveries).
	Manual ManualLimit
	// WebhookNetwork is the instance-wide network webhooks may reach (the dispatcher's
	// --webhook-allow-private and --webhook-allow-cidrs), for the warning on creation.
	WebhookNetwork webhook.Guard
	// DetailLimit bounds each list of a session's detail (1 to MaxDetailLimit).
	DetailLimit int
	// DetailBytes bounds the stored bytes of each list of a session's detail (MinDetailBytes
	// to MaxDetailBytes; else DefaultDetailBytes).
	DetailBytes int

	oldestHit atomic.Pointer[remembered] // the oldest hit stored when last looked (allHitsKeptSince)
}

// New returns the application over client; broker feeds live delivery (nil: none); now is
// the clock (time.Now in production).
func New(client *ent.Client, broker *event.Broker, now func() time.Time) *App {
	if now == nil {
		now = time.Now
	}
	return &App{client: client, broker: broker, now: now, Manual: DefaultManualLimit,
		DetailLimit: DefaultDetailLimit, DetailBytes: DefaultDetailBytes}
}

// Client is the root database client.
func (a *App) Client() *ent.Client { return a.client }

// ent returns the client of the transaction the call runs in, if any, else the root client.
func (a *App) ent(ctx context.Context) *ent.Client {
	return Ent(ctx, a.client)
}

// Ent returns the client of the transaction ctx carries (InTx, or gqlgen's transactioner for a
// GraphQL mutation), else root.
func Ent(ctx context.Context, root *ent.Client) *ent.Client {
	if c := ent.FromContext(ctx); c != nil {
		return c
	}
	return root
}

// InTx runs fn in a transaction whose client the use cases pick up from the context, as
// gqlgen's transactioner does for GraphQL mutations: the REST adapter runs its writes in it.
func (a *App) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	tx, err := a.client.Tx(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	ctx = ent.NewTxContext(ctx, tx)
	ctx = ent.NewContext(ctx, tx.Client())
	if err := fn(ctx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
