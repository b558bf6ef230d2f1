// Package tally keeps the counters the dashboard's and the API's figures are read from
// (ent's HitHour and Counter): hits per organization, trap and hour; sessions per severity
// and classification; tripwires and prompts. It stores counters and knows nothing of who
// changes what: the record package, the one writer of hits, sessions, signals and prompts,
// adds each change's delta to the pending delta of the transaction it runs in (Pending,
// Note), and the deltas are written at its commit, as one atomic upsert per counter row
// (value = value + delta), in a fixed order. So the counters are exact, commit or roll back with the change, and stay right
// with several instances writing to one PostgreSQL. docs/counters.md has the design.
package tally

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"

	"entgo.io/ent/dialect"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/counter"
	"github.com/flytrap/flytrap/ent/hithour"
	"github.com/flytrap/flytrap/store/sqltext"
)

// Counter names.
const (
	Tripwires = "tripwires" // tripwire firings of the stored sessions (sum of sessions.tripwires_fired)
	Prompts   = "prompts"   // prompts captured by the stored sessions (sum of sessions.prompts_captured)
)

// SessionsName is the counter of the stored sessions with a severity and a classification.
func SessionsName(severity, classification string) string {
	return "sessions/" + severity + "/" + classification
}

// AllTraps is the trap_id of an organization's hour bucket of all its hits.
const AllTraps = ""

type hourKey struct {
	Org, Trap string
	Hour      int64
}

type nameKey struct{ Org, Name string }

// Delta is a set of changes to counters. The zero Delta is empty and ready to use.
type Delta struct {
	hours map[hourKey]int64
	names map[nameKey]int64
	// Captured prompts, by campaign and by membership (campaign.go).
	campaigns map[string]*CampaignRow
	members   map[MemberKey]*MemberRow
	// Sessions' first hits on traps: trap_sessions rows (trapsessions.go).
	trapSessions map[trapSessionKey]struct{}
}

// Hit counts one hit of org received in hour (Unix hours), in the organization's
// bucket and, with a trap, in the trap's.
func (d *Delta) Hit(org, trap string, hour int64) {
	d.hits(org, AllTraps, hour, 1)
	if trap != "" {
		d.hits(org, trap, hour, 1)
	}
}

func (d *Delta) hits(org, trap string, hour, n int64) {
	if d.hours == nil {
		d.hours = map[hourKey]int64{}
	}
	d.hours[hourKey{org, trap, hour}] += n
}

// Add adds n to org's counter name.
func (d *Delta) Add(org, name string, n int64) {
	if n == 0 {
		return
	}
	if d.names == nil {
		d.names = map[nameKey]int64{}
	}
	d.names[nameKey{org, name}] += n
}

// Merge adds o to d.
func (d *Delta) Merge(o *Delta) {
	for k, n := range o.hours {
		d.hits(k.Org, k.Trap, k.Hour, n)
	}
	for k, n := range o.names {
		d.Add(k.Org, k.Name, n)
	}
	d.mergeCampaigns(o)
	for k := range o.trapSessions {
		d.TrapSession(k.Trap, k.Session)
	}
}

// Empty says whether d changes nothing.
func (d *Delta) Empty() bool {
	if len(d.campaigns) > 0 || len(d.members) > 0 || len(d.trapSessions) > 0 {
		return false
	}
	for _, n := range d.hours {
		if n != 0 {
			return false
		}
	}
	for _, n := range d.names {
		if n != 0 {
			return false
		}
	}
	return true
}

// Equal says whether d and o make the same changes to the counters (zero entries are no
// change); campaigns are compared by Campaigns.Diff.
func (d *Delta) Equal(o *Delta) bool {
	for k, n := range d.hours {
		if o.hours[k] != n {
			return false
		}
	}
	for k, n := range o.hours {
		if d.hours[k] != n {
			return false
		}
	}
	for k, n := range d.names {
		if o.names[k] != n {
			return false
		}
	}
	for k, n := range o.names {
		if d.names[k] != n {
			return false
		}
	}
	return true
}

// Diff describes where d and o differ, for a test's failure message.
func (d *Delta) Diff(o *Delta) string {
	var out string
	for k, n := range d.hours {
		if o.hours[k] != n {
			out += fmt.Sprintf("hits %v: %d vs %d\n", k, n, o.hours[k])
		}
	}
	for k, n := range o.hours {
		if _, ok := d.hours[k]; !ok && n != 0 {
			out += fmt.Sprintf("hits %v: 0 vs %d\n", k, n)
		}
	}
	for k, n := range d.names {
		if o.names[k] != n {
			out += fmt.Sprintf("%v: %d vs %d\n", k, n, o.names[k])
		}
	}
	for k, n := range o.names {
		if _, ok := d.names[k]; !ok && n != 0 {
			out += fmt.Sprintf("%v: 0 vs %d\n", k, n)
		}
	}
	return out
}

// pending holds the deltas of open transactions, by ent.TxKey.
var pending sync.Map

// Pending is the delta tx writes at its commit: add to it what tx changes.
func Pending(tx *ent.Tx) *Delta {
	key := ent.TxKey(tx)
	if d, ok := pending.Load(key); ok {
		return d.(*Delta)
	}
	d := &Delta{}
	pending.Store(key, d)
	tx.OnCommit(func(next ent.Committer) ent.Committer {
		return ent.CommitFunc(func(ctx context.Context, tx *ent.Tx) error {
			pending.Delete(key)
			if err := Apply(ctx, tx.Client(), d); err != nil {
				return err
			}
			return next.Commit(ctx, tx)
		})
	})
	tx.OnRollback(func(next ent.Rollbacker) ent.Rollbacker {
		return ent.RollbackFunc(func(ctx context.Context, tx *ent.Tx) error {
			pending.Delete(key)
			return next.Rollback(ctx, tx)
		})
	})
	return d
}

// Mutation is what Note needs of an ent mutation: the transaction it runs in, if any.
type Mutation interface {
	Tx() (*ent.Tx, error)
	TxKey() any
}

// Note applies d with the transaction m runs in when it commits, or at once outside
// one (then the counters follow the change by a statement of their own).
func Note(ctx context.Context, c *ent.Client, m Mutation, d *Delta) error {
	if d.Empty() {
		return nil
	}
	if key := m.TxKey(); key != nil {
		if p, ok := pending.Load(key); ok {
			p.(*Delta).Merge(d)
			return nil
		}
		if tx, err := m.Tx(); err == nil {
			Pending(tx).Merge(d)
			return nil
		}
	}
	return Apply(ctx, c, d)
}

// upsertRows bounds the rows of one upsert statement (SQLite's bound variables).
const upsertRows = 500

// Apply adds d to the stored counters through c: campaigns first (campaign.go), then an
// upsert per table and 500 rows, rows in key order, so that concurrent writers lock counter
// rows in one order and never deadlock.
// It is plain SQL (both databases spell the upsert alike), written on the writer's path.
func Apply(ctx context.Context, c *ent.Client, d *Delta) error {
	return ApplyTo(ctx, c, c.Dialect() == dialect.Postgres, d)
}

// Execer runs a statement: an *ent.Client, or the *sql.Tx of a change made in plain SQL
// (the retention purge's).
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// ApplyTo is Apply through x, on PostgreSQL when pg is set.
func ApplyTo(ctx context.Context, x Execer, pg bool, d *Delta) error {
	if err := applyCampaigns(ctx, x, pg, d); err != nil {
		return err
	}
	if err := applyTrapSessions(ctx, x, pg, d); err != nil {
		return err
	}
	hours := make([]hourKey, 0, len(d.hours))
	for k, n := range d.hours {
		if n != 0 {
			hours = append(hours, k)
		}
	}
	slices.SortFunc(hours, func(a, b hourKey) int {
		return cmp.Or(cmp.Compare(a.Org, b.Org), cmp.Compare(a.Trap, b.Trap), cmp.Compare(a.Hour, b.Hour))
	})
	for len(hours) > 0 {
		part := hours[:min(len(hours), upsertRows)]
		hours = hours[len(part):]
		args := make([]any, 0, 4*len(part))
		for _, k := range part {
			args = append(args, k.Org, k.Trap, k.Hour, d.hours[k])
		}
		q := upsert(pg, hithour.Table, []string{hithour.FieldOrgID, hithour.FieldTrapID, hithour.FieldHour, hithour.FieldHits}, 3, len(part))
		if _, err := x.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("count hits by hour: %w", err)
		}
	}
	names := make([]nameKey, 0, len(d.names))
	for k, n := range d.names {
		if n != 0 {
			names = append(names, k)
		}
	}
	slices.SortFunc(names, func(a, b nameKey) int { return cmp.Or(cmp.Compare(a.Org, b.Org), cmp.Compare(a.Name, b.Name)) })
	for len(names) > 0 {
		part := names[:min(len(names), upsertRows)]
		names = names[len(part):]
		args := make([]any, 0, 3*len(part))
		for _, k := range part {
			args = append(args, k.Org, k.Name, d.names[k])
		}
		q := upsert(pg, counter.Table, []string{counter.FieldOrgID, counter.FieldName, counter.FieldValue}, 2, len(part))
		if _, err := x.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("update counters: %w", err)
		}
	}
	return nil
}

// upsert is the statement adding rows rows to table: the first key columns are the
// unique key, the last column the count; a row that exists gets the count added:
// INSERT … ON CONFLICT (key) DO UPDATE SET n = table.n + excluded.n.
func upsert(pg bool, table string, cols []string, key, rows int) string {
	type stmt struct {
		pg    bool
		table string
		rows  int
	}
	k := stmt{pg, table, rows}
	if q, ok := upserts.Load(k); ok {
		return q.(string)
	}
	q := upsertText(pg, table, cols, key, rows)
	upserts.Store(k, q)
	return q
}

// upserts caches upsert's statements: a handful of row counts recur.
var upserts sync.Map

func upsertText(pg bool, table string, cols []string, key, rows int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES ")
	sqltext.Values(&b, pg, rows, sqltext.Columns(len(cols))...)
	n := cols[len(cols)-1]
	b.WriteString(" ON CONFLICT (" + strings.Join(cols[:key], ", ") + ") DO UPDATE SET " + n + " = " + table + "." + n + " + excluded." + n)
	return b.String()
}

// ParseSessionsName is the severity and classification of a SessionsName counter.
func ParseSessionsName(name string) (severity, classification string, ok bool) {
	rest, ok := strings.CutPrefix(name, "sessions/")
	if !ok {
		return "", "", false
	}
	severity, classification, ok = strings.Cut(rest, "/")
	return severity, classification, ok
}

// HoursEqual says whether d and o hold the same hourly hit counts.
func (d *Delta) HoursEqual(o *Delta) bool {
	return (&Delta{hours: d.hours}).Equal(&Delta{hours: o.hours})
}

// SessionsEqual says whether d and o hold the same named counters (sessions, tripwires, prompts).
func (d *Delta) SessionsEqual(o *Delta) bool {
	return (&Delta{names: d.names}).Equal(&Delta{names: o.names})
}
