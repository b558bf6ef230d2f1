package tally

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/ent/trapsession"
	"github.com/flytrap/flytrap/store/sqltext"
)

// trapSessionKey is a (trap, session) pair: the session hit the trap.
type trapSessionKey struct{ Trap, Session string }

// TrapSession notes that session hit trap: a trap_sessions row, inserted at commit unless
// it is there (ent/schema/trapsession.go).
func (d *Delta) TrapSession(trap, sessionID string) {
	if d.trapSessions == nil {
		d.trapSessions = map[trapSessionKey]struct{}{}
	}
	d.trapSessions[trapSessionKey{trap, sessionID}] = struct{}{}
}

// applyTrapSessions inserts d's trap_sessions rows, in key order (PostgreSQL's unique index
// makes a second writer of a row wait for the first: one order, no deadlock), each with its
// session's organization, read from the session's row.
func applyTrapSessions(ctx context.Context, x Execer, pg bool, d *Delta) error {
	keys := make([]trapSessionKey, 0, len(d.trapSessions))
	for k := range d.trapSessions {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b trapSessionKey) int {
		return cmp.Or(cmp.Compare(a.Trap, b.Trap), cmp.Compare(a.Session, b.Session))
	})
	for len(keys) > 0 {
		part := keys[:min(len(keys), upsertRows)]
		keys = keys[len(part):]
		args := make([]any, 0, 2*len(part))
		for _, k := range part {
			args = append(args, k.Trap, k.Session)
		}
		var q strings.Builder
		q.WriteString("INSERT INTO " + trapsession.Table + " (" + trapsession.FieldOrgID + ", " + trapsession.FieldTrapID + ", " +
			trapsession.FieldSessionID + ") SELECT s." + session.FieldOrgID + ", v.column1, v.column2 FROM (VALUES ")
		sqltext.Values(&q, pg, len(part), sqltext.Columns(2)...)
		// WHERE: SQLite's upsert after a SELECT with a join needs one.
		q.WriteString(") AS v JOIN " + session.Table + " s ON s." + session.FieldID + " = v.column2 WHERE true ON CONFLICT (" +
			trapsession.FieldTrapID + ", " + trapsession.FieldSessionID + ") DO NOTHING")
		if _, err := x.ExecContext(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("insert trap sessions: %w", err)
		}
	}
	return nil
}
