package httpx

import (
	"context"
	"net/http"
)

// Slots bound the API requests served at once, so that API work, however expensive,
// leaves the trap listener its share of the CPU: on SQLite a query runs on this process's
// cores, and JSON, GraphQL and the garbage collector do everywhere. A request waits for a
// slot with its deadline (503 TIMEOUT when it passes), after authentication and the rate
// limit, so neither an anonymous nor a rate-limited request ever queues.
type Slots chan struct{}

// NewSlots is n slots.
func NewSlots(n int) Slots { return make(Slots, n) }

// Acquire takes a slot, or reports false when ctx ends first.
func (a Slots) Acquire(ctx context.Context) bool {
	select {
	case a <- struct{}{}:
		return true
	default:
	}
	select {
	case a <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// Release gives back the slot Acquire took.
func (a Slots) Release() { <-a }

// Serve serves next in a slot. WebSocket upgrades pass (each operation takes a slot
// while it executes; a subscription's life does not), as do event streams, which the
// routes do not wrap.
func (a Slots) Serve(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsWebsocketUpgrade(r) {
			next.ServeHTTP(w, r)
			return
		}
		if !a.Acquire(r.Context()) {
			return // the deadline middleware answers 503; a caller that left gets nothing
		}
		defer a.Release()
		next.ServeHTTP(w, r)
	})
}
