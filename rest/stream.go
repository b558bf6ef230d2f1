package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/graph"
	"github.com/flytrap/flytrap/viewer"
)

// streamRetry is the reconnection delay the stream suggests to clients.
const streamRetry = 3 * time.Second

// streamEvents is GET /api/v1/events/stream: the caller's events as Server-Sent
// Events, resuming after Last-Event-ID (or ?cursor=) with no gap and no repeat.
func (a *API) streamEvents(w http.ResponseWriter, r *http.Request) error {
	if a.opts.Broker == nil {
		return errors.New("event stream: no broker configured")
	}
	q, err := query(r, "type", "cursor")
	if err != nil {
		return err
	}
	types, err := typesParam(q.Get("type"))
	if err != nil {
		return err
	}
	var last int64
	resume := r.Header.Get("Last-Event-ID")
	field := "Last-Event-ID"
	if resume == "" {
		resume, field = q.Get("cursor"), "cursor"
	}
	if resume != "" {
		if last, err = graph.ParseEventCursor(field, resume); err != nil {
			return err
		}
	} else {
		// A new reader starts at the head of the log, as EventSource expects.
		if last, err = a.res.EventHead(r.Context()); err != nil {
			return err
		}
	}
	v, _ := viewer.FromContext(r.Context())
	if !a.openStream(v.OrgID) {
		w.Header().Set("Retry-After", "30")
		return apperr.TooMany("this organization already has %d open event streams", a.opts.MaxStreamsPerOrg)
	}
	defer a.closeStream(v.OrgID)

	// Subscribe before reading the backlog: an event committed meanwhile is then
	// either in the backlog or in the subscription, and duplicates are skipped by position.
	sub := a.opts.Broker.Subscribe(v.OrgID, types, v.KeyID)
	defer a.opts.Broker.Unsubscribe(sub)

	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	send := func(format string, args ...any) error {
		_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return err
		}
		return rc.Flush()
	}
	sendEvent := func(ev *ent.Event) error {
		if ev.Position <= last {
			return nil
		}
		body, err := json.Marshal(EventData(ev))
		if err != nil {
			return err
		}
		if err := send("id: %s\ndata: %s\n\n", graph.EventCursor(ev.Position), body); err != nil {
			return err
		}
		last = ev.Position
		return nil
	}
	ctx := r.Context()
	if err := send("retry: %d\n\n", streamRetry.Milliseconds()); err != nil {
		return nil
	}
	for {
		page, err := a.res.EventsAfter(ctx, last, 100, types)
		if err != nil {
			return a.endStream(ctx, err)
		}
		for _, ev := range page.Events {
			if err := sendEvent(ev); err != nil {
				return nil // the client went away
			}
		}
		if !page.HasMore {
			break
		}
	}
	beat := time.NewTicker(a.opts.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case ev := <-sub.C:
			if err := sendEvent(ev); err != nil {
				return nil
			}
		case <-sub.Done:
			// Drained what was queued before the end, so a resume starts after it.
			for {
				select {
				case ev := <-sub.C:
					if sendEvent(ev) != nil {
						return nil
					}
					continue
				default:
				}
				break
			}
			a.log.DebugContext(ctx, "event stream ended", "reason", sub.Err())
			return nil
		case <-beat.C:
			if !a.keyStillValid(ctx, v) {
				return nil
			}
			if err := send(": keep-alive\n\n"); err != nil {
				return nil
			}
		case <-a.opts.Stopping:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// endStream logs a failure once the stream has started; the status is already sent.
func (a *API) endStream(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		a.log.ErrorContext(ctx, "event stream failed", "err", err)
	}
	return nil
}

// keyStillValid re-checks the stream's API key, so a key revoked on another
// instance also ends its streams (within a heartbeat).
func (a *API) keyStillValid(ctx context.Context, v viewer.Viewer) bool {
	if v.KeyID == "" {
		return true
	}
	k, err := a.client.APIKey.Get(privacy.DecisionContext(ctx, privacy.Allow), v.KeyID)
	return err == nil && k.RevokedAt == nil
}

func (a *API) openStream(org string) bool {
	a.streamsMu.Lock()
	defer a.streamsMu.Unlock()
	if a.opts.MaxStreamsPerOrg > 0 && a.streams[org] >= a.opts.MaxStreamsPerOrg {
		return false
	}
	a.streams[org]++
	return true
}

func (a *API) closeStream(org string) {
	a.streamsMu.Lock()
	defer a.streamsMu.Unlock()
	if a.streams[org]--; a.streams[org] <= 0 {
		delete(a.streams, org)
	}
}
