// Package upgrade runs the one-time steps that bring a database stored by an earlier
// version up to date with data the schema migration alone cannot make (counters counted
// from raw rows, tables filled from existing ones). Each step notes in the
// flytrap_upgrades table that it ran, in the transaction of its work.
package upgrade

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/flytrap/flytrap/ent"
)

// Once runs step name in one transaction unless the database notes it ran, and notes it;
// it reports whether it ran. store.Open calls it at every start, under PostgreSQL's
// migration lock, so of several instances one does it; a database created with the
// step's tables gets the note on its first start, with nothing to do.
func Once(ctx context.Context, c *ent.Client, name string, step func(ctx context.Context, tx *ent.Tx) error) (done bool, err error) {
	if _, err := c.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS flytrap_upgrades (name VARCHAR(64) PRIMARY KEY, done_at BIGINT NOT NULL)`); err != nil {
		return false, fmt.Errorf("create the upgrades table: %w", err)
	}
	tx, err := c.Tx(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	rebind := func(q string) string {
		if c.Dialect() != "postgres" {
			return strings.NewReplacer("$1", "?", "$2", "?").Replace(q)
		}
		return q
	}
	rows, err := tx.QueryContext(ctx, rebind("SELECT COUNT(*) FROM flytrap_upgrades WHERE name = $1"), name)
	if err != nil {
		return false, fmt.Errorf("read the upgrades table: %w", err)
	}
	var n int
	for rows.Next() {
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return false, err
		}
	}
	rows.Close()
	if n > 0 {
		return false, nil
	}
	if err := step(ctx, tx); err != nil {
		return false, fmt.Errorf("upgrade %s: %w", name, err)
	}
	if _, err := tx.ExecContext(ctx, rebind("INSERT INTO flytrap_upgrades (name, done_at) VALUES ($1, $2)"), name, time.Now().UnixMilli()); err != nil {
		return false, fmt.Errorf("note upgrade %s: %w", name, err)
	}
	return true, tx.Commit()
}
