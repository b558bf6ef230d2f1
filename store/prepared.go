package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
)

// maxPrepared bounds the statements kept prepared: beyond it a new statement text runs
// unprepared, as every statement did before. The hit writer's hot statements come first.
const maxPrepared = 256

type preparedKey struct{}

// Prepared marks ctx so that the statements of a transaction begun with it (ent's
// Client.Tx) are prepared once per connection and reused: the hit writer runs the same
// few statements thousands of times a second, and parsing them again each time cost it
// ~14 % of its CPU on SQLite (and a parse, plan and extra round trip on PostgreSQL).
// Only the writer asks for it: other transactions run as before.
func Prepared(ctx context.Context) context.Context {
	return context.WithValue(ctx, preparedKey{}, true)
}

// driver is ent's SQL driver, with prepared statements for transactions begun under
// Prepared and for statements that run outside a transaction (the API's reads).
type driver struct {
	*entsql.Driver
	db    *sql.DB
	mu    sync.RWMutex
	stmts map[string]*sql.Stmt
	seen  map[string]struct{} // texts run once outside a transaction (see shared)
	never map[string]struct{} // texts the database would not prepare (several statements in one, on PostgreSQL)
}

func newDriver(dia string, db *sql.DB) *driver {
	return &driver{Driver: entsql.OpenDB(dia, db), db: db, stmts: map[string]*sql.Stmt{},
		seen: map[string]struct{}{}, never: map[string]struct{}{}}
}

// maxSeen bounds the texts remembered as run once; past it the memory starts over.
const maxSeen = 4096

// shared is query's statement for use outside a transaction, or nil to run it unprepared.
// A text is prepared the second time it runs: the API's reads repeat a few shapes (a
// sessions page, an API key's lookup) whose parsing cost SQLite ~20 % of a page's CPU,
// while texts that vary with their input (an IN list's length) come once and would only
// fill the bounded cache. database/sql prepares a statement on each connection it runs on.
func (d *driver) shared(ctx context.Context, query string) *sql.Stmt {
	d.mu.RLock() // every API read passes here: the common case, a prepared text, shares the lock
	s, ok := d.stmts[query]
	d.mu.RUnlock()
	if ok {
		return s
	}
	d.mu.Lock()
	if s, ok := d.stmts[query]; ok {
		d.mu.Unlock()
		return s
	}
	_, never := d.never[query]
	_, seen := d.seen[query]
	if never || !seen || len(d.stmts) >= maxPrepared {
		if !seen && !never {
			if len(d.seen) >= maxSeen {
				clear(d.seen)
			}
			d.seen[query] = struct{}{}
		}
		d.mu.Unlock()
		return nil
	}
	delete(d.seen, query)
	d.mu.Unlock()
	// Prepared without the lock: preparing waits for a connection, which a transaction
	// waiting for the lock (stmt) may hold.
	s, err := d.db.PrepareContext(ctx, query)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return nil // the caller gave up; the statement may well prepare next time
		}
		// Run unprepared from now on: a bad statement then fails with the database's own
		// error, and a script (PostgreSQL prepares one statement at a time) runs whole.
		if len(d.never) >= maxSeen {
			clear(d.never)
		}
		d.never[query] = struct{}{}
		return nil
	}
	if other, ok := d.stmts[query]; ok { // prepared meanwhile by another caller
		s.Close()
		return other
	}
	d.stmts[query] = s
	return s
}

// Query runs ent's reads outside a transaction (ent's dialect.Driver), prepared.
func (d *driver) Query(ctx context.Context, query string, args, v any) error {
	vr, ok := v.(*entsql.Rows)
	argv, ok2 := args.([]any)
	if !ok || !ok2 {
		return d.Driver.Query(ctx, query, args, v)
	}
	rows, err := d.QueryContext(ctx, query, argv...)
	if err != nil {
		return err
	}
	*vr = entsql.Rows{ColumnScanner: rows}
	return nil
}

// Exec runs ent's statements outside a transaction (ent's dialect.Driver), prepared.
func (d *driver) Exec(ctx context.Context, query string, args, v any) error {
	argv, ok := args.([]any)
	if !ok {
		return d.Driver.Exec(ctx, query, args, v)
	}
	switch v := v.(type) {
	case nil:
		_, err := d.ExecContext(ctx, query, argv...)
		return err
	case *sql.Result:
		res, err := d.ExecContext(ctx, query, argv...)
		if err != nil {
			return err
		}
		*v = res
		return nil
	}
	return d.Driver.Exec(ctx, query, args, v)
}

// QueryContext runs a query outside a transaction (ent.Client.QueryContext), prepared.
func (d *driver) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := d.shared(ctx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return d.db.QueryContext(ctx, query, args...)
}

// ExecContext runs a statement outside a transaction (ent.Client.ExecContext), prepared.
func (d *driver) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := d.shared(ctx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return d.db.ExecContext(ctx, query, args...)
}

// Tx begins a transaction (ent's Client.Tx).
func (d *driver) Tx(ctx context.Context) (dialect.Tx, error) { return d.BeginTx(ctx, nil) }

// BeginTx begins a transaction (ent's Client.BeginTx), with prepared statements under Prepared.
func (d *driver) BeginTx(ctx context.Context, opts *sql.TxOptions) (dialect.Tx, error) {
	t, err := d.Driver.BeginTx(ctx, opts)
	if err != nil {
		return t, err
	}
	tx, stx, ok := sqlTx(t)
	switch {
	case !ok:
	case ctx.Value(preparedKey{}) != nil:
		tx.Conn.ExecQuerier = &preparedTx{tx: stx, d: d}
	case d.Dialect() == dialect.Postgres:
		tx.Conn.ExecQuerier = copyTx{stx} // CopyIn
	}
	return t, nil
}

// Close closes the prepared statements and the database.
func (d *driver) Close() error {
	d.mu.Lock()
	for q, s := range d.stmts {
		s.Close()
		delete(d.stmts, q)
	}
	d.mu.Unlock()
	return d.Driver.Close()
}

// stmt is query's statement bound to tx: prepared on tx's connection the first time it
// runs there, reused after. It is nil when the cache is full.
func (d *driver) stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	d.mu.Lock() // held across StmtContext: Close never finalizes a statement a transaction is taking
	defer d.mu.Unlock()
	s, ok := d.stmts[query]
	if !ok {
		if len(d.stmts) >= maxPrepared {
			return nil, nil
		}
		var err error
		if s, err = d.db.PrepareContext(ctx, query); err != nil {
			return nil, fmt.Errorf("prepare: %w", err)
		}
		d.stmts[query] = s
	}
	return tx.StmtContext(ctx, s), nil
}

// preparedTx runs a transaction's statements through the driver's prepared statements.
type preparedTx struct {
	tx *sql.Tx
	d  *driver
}

func (p *preparedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if r, ok := copyArg(args); ok {
		return r.run(ctx, p.tx)
	}
	s, err := p.d.stmt(ctx, p.tx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return p.tx.ExecContext(ctx, query, args...)
	}
	return s.ExecContext(ctx, args...)
}

func (p *preparedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := p.d.stmt(ctx, p.tx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return p.tx.QueryContext(ctx, query, args...)
	}
	return s.QueryContext(ctx, args...)
}
