package app

import (
	"context"
	"time"

	"entgo.io/contrib/entgql"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/ids"
)

// SessionFilter selects sessions; an empty field selects any.
type SessionFilter struct {
	Classification string                // a Classification value
	Severity       string                // a Severity value
	TrapID         string                // sessions with a stored hit on this trap
	JA4            string                // sessions with a stored hit from this TLS client (with TrapID: one hit on the trap from it)
	SourceIP       string                // an address as net/netip prints it
	Since          *time.Time            // last seen at or after
	Until          *time.Time            // first seen before
	TriageStates   []session.TriageState // in any of these triage states
}

// Where is the filter as the sessions connection's where input, the one GraphQL callers
// write themselves.
func (f SessionFilter) Where() *ent.SessionWhereInput {
	w := &ent.SessionWhereInput{LastSeenGTE: f.Since, FirstSeenLT: f.Until}
	if f.Classification != "" {
		c := session.Classification(f.Classification)
		w.Classification = &c
	}
	if f.Severity != "" {
		s := session.Severity(f.Severity)
		w.Severity = &s
	}
	if f.SourceIP != "" {
		ip := f.SourceIP
		w.SourceIP = &ip
	}
	switch len(f.TriageStates) {
	case 0:
	case 1:
		st := f.TriageStates[0]
		w.TriageState = &st
	default:
		w.TriageStateIn = f.TriageStates
	}
	if f.TrapID != "" || f.JA4 != "" {
		var h ent.HitWhereInput
		if f.TrapID != "" {
			h.TrapID = &f.TrapID
		}
		if f.JA4 != "" {
			h.Ja4 = &f.JA4
		}
		w.HasHitsWith = []*ent.HitWhereInput{&h}
	}
	return w
}

// ListSessions is a page of the sessions f selects, most recently seen first.
func (a *App) ListSessions(ctx context.Context, f SessionFilter, p Page) (*Paged[*ent.Session], error) {
	order := &ent.SessionOrder{Field: ent.SessionOrderFieldLastSeen, Direction: entgql.OrderDirectionDesc}
	after, err := p.after(ids.Session, order.Field.String())
	if err != nil {
		return nil, err
	}
	conn, err := a.Sessions(ctx, after, &p.Limit, nil, nil, order, f.Where())
	if err != nil {
		return nil, err
	}
	return paged(conn.Edges, func(e *ent.SessionEdge) *ent.Session { return e.Node }, conn.PageInfo), nil
}

// Sessions is the sessions connection: entgql's pagination (most recently seen first unless
// orderBy says otherwise) with totalCount read from the counters where they cover the filter
// (sessionCount) and capped otherwise (sessionRows), and a filter by trap or JA4 rewritten so that a
// page costs little (sessionsByMembership). GraphQL passes its arguments as they are; ListSessions
// a SessionFilter and a Page.
func (a *App) Sessions(ctx context.Context, after *entgql.Cursor[string], first *int, before *entgql.Cursor[string], last *int, orderBy *ent.SessionOrder, where *ent.SessionWhereInput) (*ent.SessionConnection, error) {
	if err := CheckSiteScope(ctx, "read sessions"); err != nil {
		return nil, err
	}
	if orderBy == nil {
		orderBy = &ent.SessionOrder{Field: ent.SessionOrderFieldLastSeen, Direction: entgql.OrderDirectionDesc}
	}
	order := ""
	if orderBy.Field != nil {
		order = orderBy.Field.String()
	}
	if err := CheckCursors(after, before, ids.Session, order); err != nil {
		return nil, err
	}
	list := func(probeAll bool) (*ent.SessionConnection, time.Time, error) {
		where, keptSince, err := a.sessionsByMembership(ctx, where, probeAll)
		if err != nil {
			return nil, keptSince, err
		}
		ctx := ctx
		if count, ok := a.sessionCount(where); ok {
			ctx = ent.WithCount(ctx, "Session", count)
		} else {
			ctx = ent.WithCount(ctx, "Session", a.sessionRows(where))
		}
		conn, err := a.ent(ctx).Session.Query().Paginate(ctx, after, first, before, last,
			ent.WithSessionOrder(orderBy), ent.WithSessionFilter(where.Filter))
		return conn, keptSince, err
	}
	conn, keptSince, err := list(false)
	if err != nil {
		return nil, err
	}
	// A purge of hits between the trap filter's look at the oldest hit and the page: once more,
	// every session probed (app/memberfilter.go).
	if purged, err := a.hitsPurgedSince(ctx, a.ent(ctx), keptSince); err != nil || purged {
		if err != nil {
			return nil, err
		}
		conn, _, err = list(true)
	}
	return conn, err
}

// TotalCountExact says whether a sessions connection's totalCount under where is exact: false
// when it was counted under a filter the counters do not cover and reached countCap + 1.
func (a *App) TotalCountExact(total int, where *ent.SessionWhereInput) bool {
	if total <= countCap {
		return true
	}
	_, counted := a.sessionCount(where)
	return counted
}
