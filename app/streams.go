package app

import (
	"context"
	"sync"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/viewer"
)

// streamSlots counts the live readers (event streams and subscriptions, whatever their
// transport) each organization holds on this instance, so one tenant cannot hold
// unbounded memory with them.
type streamSlots struct {
	mu   sync.Mutex
	max  int // 0: no limit
	open map[string]int
}

// SetMaxStreamsPerOrg caps the live readers one organization may hold open; 0 lifts the cap.
func (a *App) SetMaxStreamsPerOrg(n int) {
	a.streams.mu.Lock()
	a.streams.max = n
	a.streams.mu.Unlock()
}

// OpenStream takes one of the caller's organization's live-reader slots, or fails with
// apperr.KindTooMany when they are all taken. release gives it back; it may be called
// more than once.
func (a *App) OpenStream(ctx context.Context) (release func(), err error) {
	v, _ := viewer.FromContext(ctx)
	s := &a.streams
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.max > 0 && s.open[v.OrgID] >= s.max {
		return nil, apperr.TooMany("this organization already has %d open event streams and subscriptions", s.max)
	}
	if s.open == nil {
		s.open = map[string]int{}
	}
	s.open[v.OrgID]++
	return sync.OnceFunc(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.open[v.OrgID]--; s.open[v.OrgID] <= 0 {
			delete(s.open, v.OrgID)
		}
	}), nil
}
