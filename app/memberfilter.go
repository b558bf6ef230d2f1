package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/ja4campaign"
	"github.com/flytrap/flytrap/ent/ja4campaignsession"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/ent/trapsession"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/store/sqltext"
)

// trapListMax is the most sessions of a trap (or a JA4) for which the sessions list filtered
// by it starts from its sessions (see sessionsByMembership).
var trapListMax = 5000 // a variable for the tests

// memberFilter is a filter of sessions by one field of their hits that a membership table
// the writer keeps indexes: a trap (trap_sessions, by trap_id) or a JA4
// (ja4_campaign_sessions, by the JA4's campaign in each organization the caller reads).
type memberFilter struct {
	table, keyCol string   // the membership table and its key column
	keys          []string // the key's values: a trap id; a JA4's campaigns
	hitCol, value string   // the hits' column and the value filtered on
}

// memberFilterIn says whether where filters sessions by a trap or a JA4 alone among a hit's
// fields: the REST list's trap_id or ja4, GraphQL's hasHitsWith: [{trapID}] or [{ja4}]. (Both
// in one hasHitsWith, or in two, which ent reads as one hit matching both, are left to ent:
// the trap's hits are read by their index.)
func (a *App) memberFilterIn(ctx context.Context, where *ent.SessionWhereInput) (*memberFilter, error) {
	if where == nil || len(where.HasHitsWith) != 1 || where.HasHitsWith[0] == nil {
		return nil, nil
	}
	return a.memberFilterOf(ctx, *where.HasHitsWith[0])
}

// memberFilterOf is h as a memberFilter, when it filters by a trap or a JA4 alone.
func (a *App) memberFilterOf(ctx context.Context, h ent.HitWhereInput) (*memberFilter, error) {
	switch {
	case h.TrapID != nil:
		id := *h.TrapID
		if h.TrapID = nil; !reflect.ValueOf(h).IsZero() {
			return nil, nil
		}
		return &memberFilter{table: trapsession.Table, keyCol: trapsession.FieldTrapID, keys: []string{id}, hitCol: hit.FieldTrapID, value: id}, nil
	case h.Ja4 != nil:
		ja4 := *h.Ja4
		if h.Ja4 = nil; !reflect.ValueOf(h).IsZero() {
			return nil, nil
		}
		// The JA4's campaign of the caller's organization (of each, for the system).
		keys, err := a.ent(ctx).Ja4Campaign.Query().Where(ja4campaign.Ja4(ja4)).IDs(ctx)
		if err != nil {
			return nil, fmt.Errorf("find the JA4's campaign: %w", err)
		}
		return &memberFilter{table: ja4campaignsession.Table, keyCol: ja4campaignsession.FieldCampaignID, keys: keys, hitCol: hit.FieldJa4, value: ja4}, nil
	}
	return nil, nil
}

// sessionsByMembership rewrites a sessions filter by trap or JA4 (memberFilterIn) so that a page costs
// little whatever the database holds. ent's hasHitsWith reads every hit of the trap
// (`id IN (SELECT session_id FROM hits WHERE trap_id = ?)`) and sorts their sessions: a second
// or more for a trap with a million hits (and hits have no index on ja4 at all); and on SQLite
// with statistics (ANALYZE) the planner may walk every session of the organization instead
// (0.9 s at 800,000 sessions for a trap without hits). The trap's sessions are in
// trap_sessions, a row per (trap, session) the writer adds with the session's first hit on the
// trap (a JA4's in ja4_campaign_sessions, the same way): it counts them up to trapListMax + 1
// from that index alone, however many hits they sent. When that is all of them, the list is
// those sessions by id. For a trap with more, the list walks the organization's sessions in
// their order (the last_seen index, as the unfiltered list does) and keeps those with a
// (trap, session) row, probed by trap_sessions' unique index; the walk stops at the page's
// end, so a page reads about page size × the organization's sessions ÷ the trap's (more than
// trapListMax) rows: 8,000 for 50 of a trap just over 5,000 sessions among 800,000. The two
// costs meet near there: listing n sessions by id reads n rows, walking reads 50 × N ÷ n.
// Either way a kept session also has one of its hits on the trap, which makes the result
// exactly hasHitsWith's (a session whose hits on the trap were purged is not listed): a
// session first seen after the oldest hit stored has all its hits (allHitsKeptSince), so
// its trap_sessions row says it; an older one is probed through the hits' session_id index.
//
// keptSince is the time used to skip probes (zero when every session is probed): the
// caller reads the page, then asks hitsPurgedSince whether a purge moved it meanwhile (the
// two are separate statements) and if so lists again with probeAll.
func (a *App) sessionsByMembership(ctx context.Context, where *ent.SessionWhereInput, probeAll bool) (_ *ent.SessionWhereInput, keptSince time.Time, err error) {
	f, err := a.memberFilterIn(ctx, where)
	if err != nil || f == nil {
		return where, keptSince, err
	}
	w := *where
	w.HasHitsWith = nil
	w.Predicates = slices.Clone(w.Predicates)
	if len(f.keys) == 0 { // a JA4 no stored hit of the organization came with
		w.AddPredicates(func(s *sql.Selector) { s.Where(sql.False()) })
		return &w, keptSince, nil
	}
	c := a.ent(ctx)
	// How many sessions hit the trap, counted up to trapListMax + 1 on trap_sessions' (trap_id,
	// session_id) index alone; then, for a trap with few, their ids from the same index.
	// (A trap id names one organization's trap, a JA4 campaign one organization's JA4: the
	// sessions query keeps to the viewer's.)
	in, args := keyIn(c, f.keyCol, f.keys)
	counted, err := scanAll[int](ctx, c, "SELECT COUNT(*) FROM (SELECT 1 FROM "+f.table+" WHERE "+in+" LIMIT "+strconv.Itoa(trapListMax+1)+") t", args...)
	if err != nil || len(counted) != 1 {
		return nil, keptSince, fmt.Errorf("count the %s's sessions: %w", f.hitCol, cmp.Or(err, errors.New("no count")))
	}
	n := counted[0]
	var sessions []string
	if n <= trapListMax {
		sessions, err = scanAll[string](ctx, c, "SELECT "+trapsession.FieldSessionID+" FROM "+f.table+" WHERE "+in, args...)
		if err != nil {
			return nil, keptSince, fmt.Errorf("read the %s's sessions: %w", f.hitCol, err)
		}
	}
	kept := false
	if !probeAll {
		if keptSince, kept, err = a.allHitsKeptSince(ctx, c); err != nil {
			return nil, keptSince, err
		}
		if !kept {
			keptSince = time.Time{}
		}
	}
	w.AddPredicates(func(s *sql.Selector) {
		var conds []*sql.Predicate
		if n <= trapListMax {
			// The trap's sessions by their ids (primary key lookups, then the page's sort). Given
			// as a list, not as a subquery, whose size SQLite's planner cannot know: with
			// statistics it walks every session of the organization instead.
			conds = append(conds, sql.In(s.C(session.FieldID), anys(sessions)...))
		} else {
			// The walk keeps a session with its (trap, session) row, one probe of trap_sessions'
			// unique index: reading traps_triggered's JSON instead cost 5.5 s a page for a trap of
			// 1,001 sessions among 800,000 (SQLite).
			ts := sql.Table(f.table)
			conds = append(conds, exists(sql.Select(ts.C(trapsession.FieldSessionID)).From(ts).Where(sql.And(
				sql.In(ts.C(f.keyCol), anys(f.keys)...), sql.ColumnsEQ(ts.C(trapsession.FieldSessionID), s.C(session.FieldID))))))
		}
		// One of its hits on the trap, which makes the result exactly hasHitsWith's: the
		// session's hits by their session_id index, each row's trap_id compared. SQLite's
		// planner (3.54, with ANALYZE's statistics) would rather search the trap's hits by
		// the trap_id index for every session, a million row reads a page for a trap of 1,001
		// sessions with a hit each (1.05 s against 20 ms); "+" keeps it off that index.
		hits := sql.Table(hit.Table)
		onTrap := sql.EQ(hits.C(f.hitCol), f.value)
		if c.Dialect() == dialect.SQLite {
			onTrap = sql.ExprP("+"+hits.C(f.hitCol)+" = ?", f.value)
		}
		probe := exists(sql.Select(hits.C(hit.FieldID)).From(hits).Where(sql.And(
			sql.ColumnsEQ(hits.C(hit.FieldSessionID), s.C(session.FieldID)), onTrap)))
		if kept {
			// A session first seen after the oldest hit stored (and an hour for instances'
			// clocks) has every hit it sent: its trap_sessions row is its hit on the trap.
			probe = sql.Or(sql.GTE(s.C(session.FieldFirstSeen), keptSince), probe)
		}
		conds = append(conds, probe)
		s.Where(sql.And(conds...))
	})
	return &w, keptSince, nil
}

// keyIn is "col IN ($1, …)" over keys, in c's dialect, and its arguments.
func keyIn(c *ent.Client, col string, keys []string) (string, []any) {
	return col + " IN (" + sqltext.Rebind(c.Dialect() == dialect.Postgres, sqltext.In(len(keys))) + ")", anys(keys)
}

// allHitsKeptSince is a time after which every session first seen still has every hit it
// sent: retention deletes hits oldest first (received before its cut), so a session
// whose first hit is later than the oldest hit stored lost none. Hit ids are ULIDs made
// with the hit's received_at, so the oldest is the first id (the primary key's first
// entry). An hour more covers a session whose hits several instances received, their
// clocks apart. ok is false when no hit is stored.
//
// Finding the oldest hit reads the first entry of every partition's primary key on
// PostgreSQL (a hundred days: 1–4 ms, and the filter asks twice a page), so the App keeps the
// last one found and only checks that it is still stored, one probe of its primary key (id,
// received_at: one partition). While it is, no hit received after it has been purged (the
// oldest go first), and an older one stored since (a journal replayed late) only makes the
// answer later than it could be: more sessions probed, never fewer. Once it is gone the
// oldest is looked for again.
func (a *App) allHitsKeptSince(ctx context.Context, c *ent.Client) (t time.Time, ok bool, err error) {
	if o := a.oldestHit.Load(); o != nil {
		n, err := c.Hit.Query().Where(hit.ID(o.ID), hit.ReceivedAt(o.ReceivedAt)).Limit(1).IDs(privacy.DecisionContext(ctx, privacy.Allow))
		if err != nil {
			return t, false, fmt.Errorf("look for the oldest hit: %w", err)
		}
		if len(n) == 1 {
			return o.keptSince, true, nil
		}
	}
	var rows []remembered
	err = c.Hit.Query().Order(ent.Asc(hit.FieldID)).Limit(1).Select(hit.FieldID, hit.FieldReceivedAt).
		Scan(privacy.DecisionContext(ctx, privacy.Allow), &rows)
	if err != nil {
		return t, false, fmt.Errorf("read the oldest hit: %w", err)
	}
	if len(rows) == 0 {
		a.oldestHit.Store(nil)
		return t, false, nil
	}
	u, ok := ids.Parse(rows[0].ID, ids.Hit)
	if !ok {
		return t, false, nil
	}
	o := rows[0]
	o.keptSince = ulid.Time(u.Time()).UTC().Add(time.Hour)
	a.oldestHit.Store(&o)
	return o.keptSince, true, nil
}

// remembered is the oldest hit stored when last looked: its primary key (id, received_at),
// which the probe names whole, and the answer it gave.
type remembered struct {
	ID         string    `json:"id"`
	ReceivedAt time.Time `json:"received_at"`
	keptSince  time.Time
}

// hitsPurgedSince says whether hits were purged since allHitsKeptSince answered keptSince
// (zero: no answer was used), so that a page read with it may list a session whose hits on
// the trap went meanwhile. Any other answer counts: an older hit stored meanwhile (a journal
// replayed late) would otherwise hide a purge of the one remembered.
func (a *App) hitsPurgedSince(ctx context.Context, c *ent.Client, keptSince time.Time) (bool, error) {
	if keptSince.IsZero() {
		return false, nil
	}
	now, ok, err := a.allHitsKeptSince(ctx, c)
	return err == nil && (!ok || !now.Equal(keptSince)), err
}

// exists is "(q LIMIT 1) IS NOT NULL": LIMIT 1 keeps the probe a per-row subquery, where
// PostgreSQL would turn an EXISTS into a semi-join over every row q matches.
func exists(q *sql.Selector) *sql.Predicate {
	q.Limit(1)
	return sql.P(func(b *sql.Builder) {
		b.Wrap(func(b *sql.Builder) { b.Join(q) })
		b.WriteString(" IS NOT NULL")
	})
}

var sqlitePlaceholders = strings.NewReplacer("$1", "?", "$2", "?")

// scanAll runs a query of one column ($1, $2… placeholders, rewritten for SQLite) and
// returns its values.
func scanAll[T any](ctx context.Context, c *ent.Client, q string, args ...any) ([]T, error) {
	if c.Dialect() != dialect.Postgres {
		q = sqlitePlaceholders.Replace(q)
	}
	rows, err := c.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func anys(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}
