package app

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	entsql "entgo.io/ent/dialect/sql"

	"github.com/flytrap/flytrap/detect"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/counter"
	"github.com/flytrap/flytrap/ent/hithour"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/ent/trap"
	"github.com/flytrap/flytrap/tally"
)

// agentClasses are the classifications the overview counts as detected agents.
var agentClasses = func() []session.Classification {
	var out []session.Classification
	for _, c := range detect.Classes() {
		if c.Agent {
			out = append(out, session.Classification(c.Name))
		}
	}
	return out
}()

// The figures are read from the counters the writer maintains (tally package, docs/counters.md):
// a few dozen rows per organization whatever it has stored. Figures about sessions (agents,
// severities, tripwires, prompts) describe the sessions stored; hit figures are the hourly
// buckets, which retention leaves as they are.

// sessionCounters are the organization's session counters: sessions per severity and
// classification, tripwires, prompts.
type sessionCounters struct {
	bySeverity         map[string]int
	agents             int
	tripwires, prompts int
}

func (a *App) sessionCounters(ctx context.Context) (*sessionCounters, error) {
	rows, err := a.ent(ctx).Counter.Query().All(ctx)
	if err != nil {
		return nil, fmt.Errorf("read counters: %w", err)
	}
	out := &sessionCounters{bySeverity: map[string]int{}}
	for _, c := range rows {
		switch {
		case c.Name == tally.Tripwires:
			out.tripwires = int(c.Value)
		case c.Name == tally.Prompts:
			out.prompts = int(c.Value)
		default:
			sev, class, ok := tally.ParseSessionsName(c.Name)
			if !ok {
				continue
			}
			out.bySeverity[sev] += int(c.Value)
			if slices.Contains(agentClasses, session.Classification(class)) {
				out.agents += int(c.Value)
			}
		}
	}
	return out, nil
}

// Overview is the organization's headline figures.
type Overview struct {
	TotalHits24h    int `json:"totalHits24h"`
	AgentsDetected  int `json:"agentsDetected"`
	TripwiresFired  int `json:"tripwiresFired"`
	PromptsCaptured int `json:"promptsCaptured"`
	ActiveTraps     int `json:"activeTraps"`
}

// SeverityCounts is the stored sessions by severity.
type SeverityCounts struct {
	Critical int `json:"critical"`
	High     int `json:"high"`
	Medium   int `json:"medium"`
	Low      int `json:"low"`
}

// TimelineBucket is the hits of one hour.
type TimelineBucket struct {
	Hour time.Time `json:"hour"`
	Hits int       `json:"hits"`
}

// Overview is the organization's hits of the past 24 hours, detected agents, tripwires fired,
// prompts captured and active traps.
func (a *App) Overview(ctx context.Context) (*Overview, error) {
	if err := CheckSiteScope(ctx, "read analytics"); err != nil {
		return nil, err
	}
	var o Overview
	buckets, err := a.Timeline(ctx)
	if err != nil {
		return nil, err
	}
	for _, b := range buckets {
		o.TotalHits24h += b.Hits
	}
	sc, err := a.sessionCounters(ctx)
	if err != nil {
		return nil, err
	}
	o.AgentsDetected, o.TripwiresFired, o.PromptsCaptured = sc.agents, sc.tripwires, sc.prompts
	// An organization's traps are few (one per decoy it places), and counted by an index.
	if o.ActiveTraps, err = a.ent(ctx).Trap.Query().Where(trap.Active(true)).Count(ctx); err != nil {
		return nil, fmt.Errorf("count traps: %w", err)
	}
	return &o, nil
}

// Severity is the organization's stored sessions by severity.
func (a *App) Severity(ctx context.Context) (*SeverityCounts, error) {
	if err := CheckSiteScope(ctx, "read analytics"); err != nil {
		return nil, err
	}
	sc, err := a.sessionCounters(ctx)
	if err != nil {
		return nil, err
	}
	return &SeverityCounts{
		Critical: sc.bySeverity[string(session.SeverityCritical)], High: sc.bySeverity[string(session.SeverityHigh)],
		Medium: sc.bySeverity[string(session.SeverityMedium)], Low: sc.bySeverity[string(session.SeverityLow)],
	}, nil
}

// HourOf is the Unix hour a hit is bucketed in for the timeline.
func HourOf(t time.Time) int64 { return t.Unix() / 3600 }

// Timeline is the organization's hits per hour for the past 24 hours, the current one last.
func (a *App) Timeline(ctx context.Context) ([]*TimelineBucket, error) {
	if err := CheckSiteScope(ctx, "read analytics"); err != nil {
		return nil, err
	}
	return a.hourly(ctx, tally.AllTraps)
}

// hourly is the hits per hour for the past 24 hours of one trap, or with tally.AllTraps of all.
func (a *App) hourly(ctx context.Context, trapID string) ([]*TimelineBucket, error) {
	last := HourOf(a.now())
	first := last - 23
	rows, err := a.ent(ctx).HitHour.Query().
		Where(hithour.TrapID(trapID), hithour.HourGTE(first), hithour.HourLTE(last)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("read hits by hour: %w", err)
	}
	out := make([]*TimelineBucket, 24)
	for i := range out {
		out[i] = &TimelineBucket{Hour: time.Unix((first+int64(i))*3600, 0).UTC()}
	}
	for _, row := range rows {
		if i := row.Hour - first; i >= 0 && i < 24 {
			out[i].Hits += int(row.Hits)
		}
	}
	return out, nil
}

// sessionCount is how the sessions connection counts for totalCount from the counters,
// when where filters by nothing but severity and classification (each one value, or
// none): the unfiltered list and the dashboard's two filters. Other filters count rows.
func (a *App) sessionCount(where *ent.SessionWhereInput) (func(context.Context) (int, error), bool) {
	var sev, class string
	if where != nil {
		rest := *where
		if rest.Severity != nil {
			sev, rest.Severity = string(*rest.Severity), nil
		}
		if rest.Classification != nil {
			class, rest.Classification = string(*rest.Classification), nil
		}
		if !reflect.ValueOf(rest).IsZero() {
			return nil, false
		}
	}
	return func(ctx context.Context) (int, error) {
		rows, err := a.ent(ctx).Counter.Query().Where(counter.NameHasPrefix("sessions/")).All(ctx)
		if err != nil {
			return 0, fmt.Errorf("read session counters: %w", err)
		}
		n := 0
		for _, c := range rows {
			s, cl, ok := tally.ParseSessionsName(c.Name)
			if ok && (sev == "" || s == sev) && (class == "" || cl == class) {
				n += int(c.Value)
			}
		}
		return n, nil
	}, true
}

// countCap is how many sessions totalCount counts under a filter the counters do not cover
// (a time window, a trap, an address prefix…): up to countCap exactly, and countCap + 1 for
// "more than countCap" (totalCountExact false). An exact count under such a filter reads every
// matching row: 83,000 for the last day at 1M sessions, 17–25 ms, and a 30-day window ten times
// that; counting stops after countCap + 1 rows (docs/decisions.md, as Elasticsearch's
// track_total_hits).
var countCap = 10000 // a variable for the tests

// sessionRows counts the sessions where selects, up to countCap + 1, for totalCount under
// filters the counters do not cover. The filter's predicates are conditions and subqueries on
// the sessions table, never joins, so a row is a session: it counts rows (SELECT 1 … LIMIT),
// not ent's COUNT(DISTINCT id), which reads every row and sorts or hashes the ids, and the
// filter's index answers alone (PostgreSQL's index-only scan, SQLite's covering index).
func (a *App) sessionRows(where *ent.SessionWhereInput) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		q, err := where.Filter(a.ent(ctx).Session.Query())
		if err != nil {
			return 0, err
		}
		// ent runs an aggregate function on the finished selector (predicates and tenant
		// filter applied): it becomes the capped row set, and the query counts its rows.
		capped := func(s *entsql.Selector) string {
			rows := s.Clone().SelectExpr(entsql.Expr("1")).Limit(countCap + 1)
			s.SetP(nil).From(rows.As("capped"))
			return entsql.Count("*")
		}
		return q.Aggregate(capped).Int(ctx)
	}
}
