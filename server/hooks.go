package server

import (
	entgo "entgo.io/ent"

	"github.com/flytrap/flytrap/ent"

	"github.com/flytrap/flytrap/ent/hook"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/webhook"
)

// registerHooks is every side effect of a write, in one place. The data model's own rules
// (defaults, guards, validation, tenant isolation) stay with it in ent/schema; what the
// engine does when data changes is registered here, on both of the instance's clients (the
// API's and the trap listener's pools: store.DB), so that "what happens when a trap is
// created" is answered by reading this function. The counters of hits, sessions, signals and
// prompts are no hook: the record package, the one writer of those rows, adds their deltas
// where it writes them (docs/counters.md).
func (s *Server) registerHooks() {
	s.registerHooksOn(s.db.Client)
	s.registerHooksOn(s.db.Trap)
}

func (s *Server) registerHooksOn(c *ent.Client) {
	// The outbox, in the transaction of the change (none lost, none invented):
	c.Trap.Use(event.TrapEvents)                         // trap.created / trap.updated / trap.deleted
	c.Event.Use(hook.On(webhook.Outbox, entgo.OpCreate)) // each event → a delivery per matching endpoint

	// Wake-ups after commit, on this instance:
	onEvent, onKey := s.broker.Hooks()
	c.Event.Use(onEvent)                         // live readers (SSE, subscriptions) read the new event
	c.APIKey.Use(onKey)                          // a revoked key's subscriptions end
	c.WebhookDelivery.Use(s.webhooks.WakeHook()) // the dispatcher sends the new delivery
	if s.metrics != nil {
		c.Event.Use(s.metrics.eventsHook()) // flytrap_events_appended_total
	}
	routes := s.engine.RoutesHook()
	c.Trap.Use(routes) // the trap listener reloads its routes
	c.Site.Use(routes)

	// Other instances on the same PostgreSQL, by NOTIFY in the transaction.
	if s.notifier != nil {
		s.notifier.RegisterHooks(c)
	}
}
