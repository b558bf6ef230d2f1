package app

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"entgo.io/contrib/entgql"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	entevent "github.com/flytrap/flytrap/ent/event"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/internal/clip"
	"github.com/flytrap/flytrap/viewer"
)

// EventPage is a stretch of the caller's event log, oldest first.
type EventPage struct {
	Events  []*ent.Event
	HasMore bool
	// Next is the position to continue after: the last event's, or the one asked
	// after when the page is empty, so polling with it returns only newer events.
	Next int64
}

// EventFilter selects events: of some types (all when empty; already expanded by
// EventTypes, so no wildcard), created at or after Since and before Until (zero: unbounded).
type EventFilter struct {
	Types        []string
	Since, Until time.Time
}

// EventsAfter returns up to limit of the caller's events with a position above after
// that f selects. It reads by keyset, so a page deep in the log costs what the first one
// does; a time bound becomes a position bound first (EventPositionAt), since the event
// clock never goes back within a log.
func (a *App) EventsAfter(ctx context.Context, after int64, limit int, f EventFilter) (*EventPage, error) {
	if err := CheckSiteScope(ctx, "read events"); err != nil {
		return nil, err
	}
	q := a.ent(ctx).Event.Query().Where(entevent.PositionGT(after))
	if len(f.Types) > 0 {
		q = q.Where(entevent.TypeIn(f.Types...))
	}
	if !f.Since.IsZero() {
		from, err := a.EventPositionAt(ctx, f.Since)
		if err != nil {
			return nil, err
		}
		if from > after {
			q = q.Where(entevent.PositionGT(from))
		}
	}
	if !f.Until.IsZero() {
		q = q.Where(entevent.CreatedAtLT(f.Until))
	}
	evs, err := q.Order(ent.Asc(entevent.FieldPosition)).Limit(limit + 1).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	// The page is read first: if it starts right after the cursor nothing was missed,
	// whatever a purge deletes afterwards; else the log's oldest position says.
	if after > 0 && (len(evs) == 0 || evs[0].Position != after+1) {
		if err := a.CheckEventCursor(ctx, "cursor", after, RestartList); err != nil {
			return nil, err
		}
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

// ErrEventsGone is the error of a cursor whose next events retention deleted: the
// reader would silently skip them, so it is told to start again from the oldest event.
func ErrEventsGone(field string, oldest int64, restart string) error {
	msg := "the events after this cursor were deleted by the retention period (--retain-events); " +
		"restart from the oldest event kept"
	if oldest > 0 {
		msg += " (position " + strconv.FormatInt(oldest, 10) + ")"
	}
	msg += ": " + restart
	return &apperr.Error{Kind: apperr.KindGone, Field: field, Msg: msg}
}

// How each reader starts again from the oldest event kept.
var (
	RestartList   = "read the list again without a cursor"
	RestartStream = "reconnect with ?cursor=" + EventCursor(0) + " and no Last-Event-ID"
	RestartGraph  = "query the events connection without after, ordered by POSITION"
)

// CheckEventCursor answers ErrEventsGone when events right after position after are no
// longer stored, yet later ones were written: retention deletes the oldest positions of
// the log only, so the log's oldest position (or, when it is empty, the newest ever
// handed out) says whether a reader at after would skip any.
func (a *App) CheckEventCursor(ctx context.Context, field string, after int64, restart string) error {
	if after <= 0 {
		return nil
	}
	oldest, err := a.ent(ctx).Event.Query().Order(ent.Asc(entevent.FieldPosition)).First(ctx)
	switch {
	case err == nil:
		if oldest.Position <= after+1 {
			return nil
		}
		return ErrEventsGone(field, oldest.Position, restart)
	case !ent.IsNotFound(err):
		return fmt.Errorf("read the oldest event: %w", err)
	}
	org, ok := viewer.FromContext(ctx)
	if !ok {
		return nil
	}
	head, err := event.Head(privacy.DecisionContext(ctx, privacy.Allow), a.ent(ctx), org.OrgID)
	if err != nil {
		return err
	}
	if after < head {
		return ErrEventsGone(field, 0, restart)
	}
	return nil
}

// EventPositionAt is the position of the caller's last event created before at (0 when
// there is none): reading after it starts at the first event created at or after at. It
// reads one row by the (org_id, created_at) index.
func (a *App) EventPositionAt(ctx context.Context, at time.Time) (int64, error) {
	ev, err := a.ent(ctx).Event.Query().Where(entevent.CreatedAtGTE(at)).
		Order(ent.Asc(entevent.FieldCreatedAt), ent.Asc(entevent.FieldPosition)).First(ctx)
	switch {
	case ent.IsNotFound(err):
		return a.EventHead(ctx)
	case err != nil:
		return 0, fmt.Errorf("read the first event since %s: %w", at.Format(time.RFC3339), err)
	}
	return ev.Position - 1, nil
}

// EventTypes checks a type filter (event types, "*" or "prefix.*" as webhook endpoints
// take) and returns the event types it takes: nil for all. field names it in errors.
func EventTypes(field string, filter []string) ([]string, error) {
	for _, t := range filter {
		if !event.ValidFilter(t) {
			return nil, apperr.Invalid(field, "%q is not an event type or a prefix like threat.* (known: %s)", clip.Mark(t, 64), strings.Join(event.Types, ", "))
		}
	}
	return event.Expand(filter), nil
}

// EventHead is the position of the caller's newest event (0 when there is none).
func (a *App) EventHead(ctx context.Context) (int64, error) {
	ev, err := a.ent(ctx).Event.Query().Order(ent.Desc(entevent.FieldPosition)).First(ctx)
	if ent.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the newest event: %w", err)
	}
	return ev.Position, nil
}

// EventPosition reads the position out of an events cursor (of this subscription, or of
// the events connection ordered by POSITION).
func EventPosition(c *entgql.Cursor[string]) (int64, error) {
	if CheckCursor("after", c, ids.Event, "POSITION") != nil {
		return 0, apperr.Invalid("after", "is not a cursor of the event log (order the events connection by POSITION)")
	}
	return c.Value.(int64), nil
}
