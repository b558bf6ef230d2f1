package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"entgo.io/ent/dialect"
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
// value of its own for it: an operator's ALTER TABLE … SET stays. PostgreSQL only.
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
		if _, err := db.ExecContext(ctx, "ALTER TABLE "+quote(table)+" SET ("+strings.Join(set, ", ")+")"); err != nil {
			return fmt.Errorf("set %s's autovacuum options: %w", table, err)
		}
	}
	return nil
}

// AutovacuumOff says whether the PostgreSQL server runs without autovacuum (its autovacuum
// setting off), which leaves the dead row versions of every session update in the sessions
// indexes until someone runs VACUUM: the server warns about it at start. False on SQLite.
func (d *DB) AutovacuumOff(ctx context.Context) (bool, error) {
	if d.Dialect != dialect.Postgres {
		return false, nil
	}
	var on string
	if err := d.SQL.QueryRowContext(ctx, "SHOW autovacuum").Scan(&on); err != nil {
		return false, fmt.Errorf("read the autovacuum setting: %w", err)
	}
	return on != "on", nil
}
