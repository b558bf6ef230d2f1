package graph

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	entevent "github.com/flytrap/flytrap/ent/event"
)

// EventPage is a stretch of the caller's event log, oldest first.
type EventPage struct {
	Events  []*ent.Event
	HasMore bool
	// Next is the position to continue after: the last event's, or the one asked
	// after when the page is empty, so polling with it returns only newer events.
	Next int64
}

// EventsAfter returns up to limit of the caller's events with a position above after,
// of the given types (all when empty). It reads by keyset, so a page deep in the log
// costs what the first one does.
func (r *Resolver) EventsAfter(ctx context.Context, after int64, limit int, types []string) (*EventPage, error) {
	q := r.ent(ctx).Event.Query().Where(entevent.PositionGT(after))
	if len(types) > 0 {
		q = q.Where(entevent.TypeIn(types...))
	}
	evs, err := q.Order(ent.Asc(entevent.FieldPosition)).Limit(limit + 1).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	page := &EventPage{Events: evs, Next: after}
	if len(evs) > limit {
		page.Events, page.HasMore = evs[:limit], true
	}
	if n := len(page.Events); n > 0 {
		page.Next = page.Events[n-1].Position
	}
	return page, nil
}

const eventCursorPrefix = "pos:"

// EventCursor is the opaque cursor of the position after which a reader continues.
func EventCursor(position int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(eventCursorPrefix + strconv.FormatInt(position, 10)))
}

// ParseEventCursor reads a cursor made by EventCursor; field names the parameter in errors.
func ParseEventCursor(field, cursor string) (int64, error) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || !strings.HasPrefix(string(raw), eventCursorPrefix) {
		return 0, apperr.Invalid(field, "is not a cursor this API issued")
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(string(raw), eventCursorPrefix), 10, 64)
	if err != nil || n < 0 {
		return 0, apperr.Invalid(field, "is not a cursor this API issued")
	}
	return n, nil
}

// EventHead is the position of the caller's newest event (0 when there is none).
func (r *Resolver) EventHead(ctx context.Context) (int64, error) {
	ev, err := r.ent(ctx).Event.Query().Order(ent.Desc(entevent.FieldPosition)).First(ctx)
	if ent.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the newest event: %w", err)
	}
	return ev.Position, nil
}
