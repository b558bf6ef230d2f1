package store

import (
	"context"
	"database/sql"
	"fmt"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/lib/pq"
)

// CopyIn adds rows to table's columns (values in the columns' order) with PostgreSQL's
// COPY, in the transaction c belongs to (ent's Tx.Client, from a client on a database this
// package opened). The hit writer sends its batch's rows so: the server parses and plans no
// INSERT of a thousand parameters, and the rows go as one stream. Values go in COPY's text
// format (lib/pq's encoding): a []byte is sent as bytea, so a JSON column takes a string.
func CopyIn(ctx context.Context, c interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, table string, columns []string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	_, err := c.ExecContext(ctx, "COPY "+table, copyRows{table: table, columns: columns, rows: rows})
	return err
}

// copyRows, as the one argument of a transaction's ExecContext, is a COPY to run on it
// (copyTx, preparedTx): database/sql has no other way to reach the transaction's
// connection through ent.
type copyRows struct {
	table   string
	columns []string
	rows    [][]any
}

// copyArg is the COPY that args carry, if they are one.
func copyArg(args []any) (copyRows, bool) {
	if len(args) != 1 {
		return copyRows{}, false
	}
	r, ok := args[0].(copyRows)
	return r, ok
}

// run sends the rows on tx: each row's Exec buffers it (lib/pq flushes every 64 KiB), the
// last Exec ends the COPY and reports what the server refused.
func (r copyRows) run(ctx context.Context, tx *sql.Tx) (sql.Result, error) {
	st, err := tx.PrepareContext(ctx, pq.CopyIn(r.table, r.columns...))
	if err != nil {
		return nil, fmt.Errorf("copy into %s: %w", r.table, err)
	}
	defer st.Close()
	for _, row := range r.rows {
		if _, err := st.ExecContext(ctx, row...); err != nil {
			return nil, fmt.Errorf("copy into %s: %w", r.table, err)
		}
	}
	res, err := st.ExecContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("copy into %s: %w", r.table, err)
	}
	return res, nil
}

// copyTx is a PostgreSQL transaction's statements as they run (not prepared), and its COPYs.
type copyTx struct{ *sql.Tx }

func (t copyTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if r, ok := copyArg(args); ok {
		return r.run(ctx, t.Tx)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

// sqlTx is the database/sql transaction under ent's, if it is one.
func sqlTx(t dialect.Tx) (*entsql.Tx, *sql.Tx, bool) {
	tx, ok := t.(*entsql.Tx)
	if !ok {
		return nil, nil, false
	}
	stx, ok := tx.Tx.(*sql.Tx)
	return tx, stx, ok
}
