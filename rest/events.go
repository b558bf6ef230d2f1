package rest

import (
	"net/http"
	"slices"
	"strings"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/internal/clip"
	"github.com/flytrap/flytrap/wire"
)

// typesParam reads the type filter: one event type or a comma-separated list.
func typesParam(v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	var types []string
	for _, t := range strings.Split(v, ",") {
		t = strings.TrimSpace(t)
		if !slices.Contains(event.Types, t) {
			return nil, apperr.Invalid("type", "%q is not an event type (known: %s)", clip.Mark(t, maxEcho), strings.Join(event.Types, ", "))
		}
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	return types, nil
}

func (a *API) listEvents(w http.ResponseWriter, r *http.Request) error {
	q, err := query(r, "limit", "type", "cursor")
	if err != nil {
		return err
	}
	limit, err := limitParam(q)
	if err != nil {
		return err
	}
	types, err := typesParam(q.Get("type"))
	if err != nil {
		return err
	}
	var after int64
	if v := q.Get("cursor"); v != "" {
		if after, err = app.ParseEventCursor("cursor", v); err != nil {
			return err
		}
	}
	page, err := a.app.EventsAfter(r.Context(), after, limit, types)
	if err != nil {
		return err
	}
	events := make([]wire.Event, len(page.Events))
	for i, ev := range page.Events {
		events[i] = wire.EventOf(ev)
	}
	writeJSON(w, http.StatusOK, wire.EventsPage{Events: events, HasMore: page.HasMore, NextCursor: app.EventCursor(page.Next)})
	return nil
}
