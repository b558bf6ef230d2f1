package record

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/prompt"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/ent/signal"
	"github.com/flytrap/flytrap/store/sqltext"
	"github.com/flytrap/flytrap/tally"
)

// The retention purge deletes what this package wrote through the functions below. Deleting
// hits, signals and prompts changes no counter: the hourly buckets and the campaigns are a
// history, kept after the raw rows are gone. Deleting a session takes it out of the session
// counters (severity and classification, tripwires, prompts), in the deleting transaction;
// its campaign_sessions and trap_sessions rows go with it (ON DELETE CASCADE).

// Evidence is the tables of a session's evidence, deleted before the session itself.
var Evidence = []string{hit.Table, signal.Table, prompt.Table}

// DeleteSessionEvidence deletes up to limit rows of table (one of Evidence) belonging to
// the sessions of list that are still last seen before cut (the writer may have moved one
// since it was listed). It returns how many it deleted.
func DeleteSessionEvidence(ctx context.Context, db *sql.DB, pg bool, table string, list []string, cut time.Time, limit int) (int64, error) {
	in, args := inList(list)
	args = append(args, cut)
	q := rebind(pg, "DELETE FROM "+table+" WHERE id IN (SELECT id FROM "+table+" WHERE session_id IN (SELECT "+session.FieldID+
		" FROM "+session.Table+" WHERE "+session.FieldID+" IN ("+in+") AND "+session.FieldLastSeen+" < ?) LIMIT "+strconv.Itoa(limit)+")")
	r, err := db.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("delete expired sessions' %s: %w", table, err)
	}
	n, _ := r.RowsAffected()
	return n, nil
}

// DeletedSession is a session the purge deleted, as its counters knew it.
type DeletedSession struct {
	ID, OrgID, Severity, Classification string
	TripwiresFired, PromptsCaptured     int64
}

// DeleteExpiredSessions deletes, in tx, the sessions of list still last seen before cut and
// left without evidence, and takes each out of the session counters in tx. A session the
// writer added a hit to meanwhile makes the foreign key refuse the delete: the error says so
// (the caller leaves it for the next run).
func DeleteExpiredSessions(ctx context.Context, tx *sql.Tx, pg bool, list []string, cut time.Time) ([]DeletedSession, error) {
	in, args := inList(list)
	args = append(args, cut)
	cond := "id IN (" + in + ") AND last_seen < ?"
	for _, t := range Evidence {
		cond += " AND NOT EXISTS (SELECT 1 FROM " + t + " WHERE " + t + ".session_id = sessions.id)"
	}
	// RETURNING (SQLite 3.35+, PostgreSQL): what was deleted, for the counters.
	rows, err := tx.QueryContext(ctx, rebind(pg, "DELETE FROM sessions WHERE "+cond+
		" RETURNING id, org_id, severity, classification, tripwires_fired, prompts_captured"), args...)
	if err != nil {
		return nil, fmt.Errorf("delete expired sessions: %w", err)
	}
	var gone []DeletedSession
	for rows.Next() {
		var d DeletedSession
		if err := rows.Scan(&d.ID, &d.OrgID, &d.Severity, &d.Classification, &d.TripwiresFired, &d.PromptsCaptured); err != nil {
			rows.Close()
			return nil, err
		}
		gone = append(gone, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("delete expired sessions: %w", err)
	}
	var d tally.Delta
	for _, g := range gone {
		d.Add(g.OrgID, tally.SessionsName(g.Severity, g.Classification), -1)
		d.Add(g.OrgID, tally.Tripwires, -g.TripwiresFired)
		d.Add(g.OrgID, tally.Prompts, -g.PromptsCaptured)
	}
	if err := tally.ApplyTo(ctx, tx, pg, &d); err != nil {
		return nil, fmt.Errorf("take deleted sessions out of the counters: %w", err)
	}
	return gone, nil
}

// inList is a list of placeholders for list, and list as arguments.
func inList(list []string) (string, []any) {
	args := make([]any, len(list))
	for i, s := range list {
		args[i] = s
	}
	return sqltext.In(len(list)), args
}

// rebind numbers the placeholders for PostgreSQL.
func rebind(pg bool, q string) string { return sqltext.Rebind(pg, q) }
