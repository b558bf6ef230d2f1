package rest

import (
	"net/http"
	"slices"
	"strings"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/wire"
)

// typesParam reads the type filter: a comma-separated list of event types or prefixes
// such as threat.* (a webhook endpoint's filter), as the event types it takes.
func typesParam(v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	var filter []string
	for _, t := range strings.Split(v, ",") {
		if t = strings.TrimSpace(t); !slices.Contains(filter, t) {
			filter = append(filter, t)
		}
	}
	return app.EventTypes("type", filter)
}

func (a *API) listEvents(w http.ResponseWriter, r *http.Request) error {
	q, err := query(r, "limit", "type", "cursor", "since", "until")
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
	f := app.EventFilter{Types: types}
	since, err := timeParam(q, "since")
	if err != nil {
		return err
	}
	until, err := timeParam(q, "until")
	if err != nil {
		return err
	}
	if since != nil {
		f.Since = *since
	}
	if until != nil {
		f.Until = *until
	}
	page, err := a.app.EventsAfter(r.Context(), after, limit, f)
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
