package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"entgo.io/ent/dialect"
	"github.com/lib/pq"
)

// vacuumOptions are the autovacuum settings Flytrap gives the PostgreSQL tables the hit writer
// updates in place and the API reads in the order of a changing column. Each batch of hits
// updates its sessions' last_seen and hit_count; last_seen is in five of the table's indexes, so
// no update is HOT and each leaves a dead version in every index, at the newest end of the
// last_seen ones that every "most recently seen" page starts from. PostgreSQL's default waits
// for dead rows to reach a fifth of the table (200,000 at a million sessions): at 3,700 hits/s
// a sessions page then walked 7,600 buffers of dead entries before its first row (84 ms, 10.8
// ms once vacuumed; docs/benchmarks.md, run 7). A hundredth plus 1,000 lets autovacuum come
// each time it looks (autovacuum_naptime) while hits arrive, and rarely when they do not.
var vacuumOptions = map[string][]string{
	"sessions": {"autovacuum_vacuum_scale_factor=0.01", "autovacuum_vacuum_threshold=1000"},
}

// setVacuumOptions sets vacuumOptions on their tables, each option only where the table has no
// value of its own for it: an operator's ALTER TABLE … SET stays (an option RESET is set again;
// to opt out, set a value). PostgreSQL only.
func setVacuumOptions(ctx context.Context, db *sql.DB) error {
	for table, opts := range vacuumOptions {
		var have sql.NullString
		if err := db.QueryRowContext(ctx, `SELECT array_to_string(reloptions, ',') FROM pg_class WHERE oid = to_regclass($1)`, quote(table)).Scan(&have); err != nil {
			return fmt.Errorf("read %s's storage options: %w", table, err)
		}
		var set []string
		for _, o := range opts {
			name := o[:strings.IndexByte(o, '=')+1]
			if !strings.Contains(","+have.String, ","+name) {
				set = append(set, o)
			}
		}
		if len(set) == 0 {
			continue
		}
		if err := alterWithin(ctx, db, "ALTER TABLE "+quote(table)+" SET ("+strings.Join(set, ", ")+")"); err != nil {
			return fmt.Errorf("set %s's autovacuum options: %w", table, err)
		}
	}
	return nil
}

// vacuumLockWait bounds how long the start waits for the lock ALTER TABLE … SET takes (SHARE
// UPDATE EXCLUSIVE): a running VACUUM, ANALYZE or CREATE INDEX CONCURRENTLY holds it, and the
// start holds the migration lock meanwhile, which other instances' starts wait for.
const vacuumLockWait = 3 * time.Second

// alterWithin runs stmt with a lock_timeout of vacuumLockWait; when the lock is not had in that
// time it does nothing (the next start tries again).
func alterWithin(ctx context.Context, db *sql.DB, stmt string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", vacuumLockWait.Milliseconds())); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, stmt); err != nil {
		if pe := (*pq.Error)(nil); errors.As(err, &pe) && pe.Code == "55P03" { // lock_not_available
			return nil
		}
		return err
	}
	return tx.Commit()
}

// AutovacuumOff says whether autovacuum will not vacuum the sessions table on this PostgreSQL
// server: autovacuum or track_counts (whose counts it goes by) off, or the table's own
// autovacuum_enabled false. The dead row versions of every session update then stay in the
// sessions indexes until someone runs VACUUM: the server warns about it at start. False on
// SQLite.
func (d *DB) AutovacuumOff(ctx context.Context) (bool, error) {
	if d.Dialect != dialect.Postgres {
		return false, nil
	}
	var on bool
	err := d.SQL.QueryRowContext(ctx, `SELECT current_setting('autovacuum')::bool AND current_setting('track_counts')::bool
		AND NOT EXISTS (SELECT 1 FROM pg_class, unnest(reloptions) o WHERE oid = to_regclass('sessions') AND o LIKE 'autovacuum\_enabled=%' AND NOT split_part(o, '=', 2)::bool)`).Scan(&on)
	if err != nil {
		return false, fmt.Errorf("read the autovacuum settings: %w", err)
	}
	return !on, nil
}
