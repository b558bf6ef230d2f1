package rest

import (
	"encoding/json"

	"fmt"
	"net/http"
	"time"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/graph"
	"github.com/flytrap/flytrap/viewer"
)

// streamRetry is the reconnection delay the stream suggests to clients.
const streamRetry = 3 * time.Second

// streamEvents is GET /api/v1/events/stream: the caller's events as Server-Sent
// Events, resuming after Last-Event-ID (or ?cursor=) with no gap and no repeat.
func (a *API) streamEvents(w http.ResponseWriter, r *http.Request) error {
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
	ctx := r.Context()
	if err := send("retry: %d\n\n", streamRetry.Milliseconds()); err != nil {
		return nil
	}
	f := graph.Follow{
		Types:     types,
		After:     last,
		Heartbeat: a.opts.Heartbeat,
		Beat: func() error {
			if err := a.res.KeyStillValid(ctx); err != nil {
				return err
			}
			return send(": keep-alive\n\n")
		},
		Stop: a.opts.Stopping,
	}
	err = a.res.FollowEvents(ctx, f, func(ev *ent.Event) error {
		body, err := json.Marshal(EventData(ev))
		if err != nil {
			return err
		}
		return send("id: %s\ndata: %s\n\n", graph.EventCursor(ev.Position), body)
	})
	if err != nil {
		a.log.DebugContext(ctx, "event stream ended", "reason", err) // the status is sent; the client resumes
	}
	return nil
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
