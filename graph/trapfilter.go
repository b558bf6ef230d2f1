package graph

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql"
	"entgo.io/ent/dialect/sql/sqljson"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/session"
)

// trapListMax is the most hits of a trap for which the sessions list filtered by that trap
// starts from the trap's hits (see sessionsOnTrap).
var trapListMax = 1000 // a variable for the tests

// trapFilter says whether where filters sessions by a trap alone among hit fields: the
// REST list's trap_id, GraphQL's hasHitsWith: {trapID}. It returns the trap id.
func trapFilter(where *ent.SessionWhereInput) (string, bool) {
	if where == nil || len(where.HasHitsWith) != 1 || where.HasHitsWith[0] == nil || where.HasHitsWith[0].TrapID == nil {
		return "", false
	}
	h := *where.HasHitsWith[0]
	id := *h.TrapID
	h.TrapID = nil
	return id, reflect.ValueOf(h).IsZero()
}

// sessionsOnTrap rewrites a sessions filter by trap (trapFilter) so that a page costs little
// whatever the database holds. ent's hasHitsWith reads every hit of the trap
// (`id IN (SELECT session_id FROM hits WHERE trap_id = ?)`) and sorts their sessions: a second
// or more for a trap with a million hits; and on SQLite with statistics (ANALYZE) the planner
// may walk every session of the organization instead, checking each against the subquery
// (0.9 s at 800,000 sessions for a trap without hits). It reads up to trapListMax + 1 of the
// trap's hits along the trap_id index (counting them, index only): when that is all of them,
// the list is their sessions by id. For a trap with more than trapListMax hits the list instead walks the organization's sessions in their order
// (the last_seen index, as the unfiltered list does) and keeps those that hit the trap: the
// trap's id in traps_triggered, a column of the row already read, which every session with a
// hit on the trap has (the detection engine adds a trap there with its first hit), then
// one of its hits on the trap, probed through the hits' session_id index, which makes the
// result exactly hasHitsWith's. The walk stops at the page's end, so a busy trap's page reads about
// (page size ÷ the share of sessions that hit the trap) rows: the worst case is a trap just
// over trapListMax hits, all from a handful of sessions, in a large organization: the walk
// then reads every session of the organization (docs/benchmarks.md, "Reads at 1M sessions /
// 10M hits"). A table of (trap, session) pairs ordered by the session's last_seen, kept by
// the writer, would make every trap's page flat; it is not built yet.
func (r *Resolver) sessionsOnTrap(ctx context.Context, where *ent.SessionWhereInput) (*ent.SessionWhereInput, error) {
	id, ok := trapFilter(where)
	if !ok {
		return where, nil
	}
	c := r.ent(ctx)
	// How many hits the trap has, counted up to trapListMax + 1 on the trap_id index alone (an
	// index-only scan on both databases); then, for a trap with few, their sessions.
	n, err := scanInt(ctx, c, "SELECT COUNT(*) FROM (SELECT 1 FROM "+hit.Table+" WHERE "+hit.FieldTrapID+" = $1 LIMIT $2) t", id, trapListMax+1)
	if err != nil {
		return nil, fmt.Errorf("count the trap's hits: %w", err)
	}
	var sessions []string
	if n <= trapListMax {
		q := "SELECT DISTINCT " + hit.FieldSessionID + " FROM " + hit.Table + " WHERE " + hit.FieldTrapID + " = $1"
		if c.Dialect() != dialect.Postgres {
			q = strings.ReplaceAll(q, "$1", "?")
		}
		rows, err := c.QueryContext(ctx, q, id)
		if err != nil {
			return nil, fmt.Errorf("read the trap's hits: %w", err)
		}
		for rows.Next() {
			var sid string
			if err := rows.Scan(&sid); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read the trap's hits: %w", err)
			}
			sessions = append(sessions, sid)
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	w := *where
	w.HasHitsWith = nil
	w.Predicates = slices.Clone(w.Predicates)
	if n <= trapListMax {
		// Every hit of the trap was read: its sessions, by their ids (primary key lookups, then
		// the page's sort). Given as a list, not as ent's subquery, whose size SQLite's planner
		// cannot know: with statistics it walks every session of the organization instead.
		w.AddPredicates(session.IDIn(sessions...))
		return &w, nil
	}
	w.AddPredicates(func(s *sql.Selector) {
		hits := sql.Table(hit.Table)
		// LIMIT 1 keeps the probe a per-row subquery: PostgreSQL would otherwise turn an
		// EXISTS into a semi-join over every hit of the trap.
		probe := sql.Select(hits.C(hit.FieldID)).From(hits).
			Where(sql.And(sql.ColumnsEQ(hits.C(hit.FieldSessionID), s.C(session.FieldID)), sql.EQ(hits.C(hit.FieldTrapID), id))).
			Limit(1)
		s.Where(sql.And(
			sqljson.ValueContains(s.C(session.FieldTrapsTriggered), id),
			sql.P(func(b *sql.Builder) {
				b.Wrap(func(b *sql.Builder) { b.Join(probe) })
				b.WriteString(" IS NOT NULL")
			}),
		))
	})
	return &w, nil
}

// scanInt runs a query of one integer ($1, $2… placeholders, rewritten for SQLite).
func scanInt(ctx context.Context, c *ent.Client, q string, args ...any) (int, error) {
	if c.Dialect() != dialect.Postgres {
		q = strings.NewReplacer("$1", "?", "$2", "?").Replace(q)
	}
	rows, err := c.QueryContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return 0, err
		}
	}
	return n, rows.Err()
}
