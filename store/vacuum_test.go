package store_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/store"
)

// The sessions table gets its autovacuum options at start, and an operator's own value for one
// of them survives the next start; AutovacuumOff reads the server's setting. PostgreSQL only.
func TestSessionsVacuumOptions(t *testing.T) {
	dsn := ft.PostgresDSN(t)
	ctx := context.Background()
	open := func() *store.DB {
		db, err := store.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	options := func(db *store.DB) string {
		var o sql.NullString
		if err := db.SQL.QueryRowContext(ctx, `SELECT array_to_string(reloptions, ',') FROM pg_class WHERE oid = 'sessions'::regclass`).Scan(&o); err != nil {
			t.Fatal(err)
		}
		return o.String
	}
	db := open()
	if got := options(db); got != "autovacuum_vacuum_scale_factor=0.01,autovacuum_vacuum_threshold=1000" {
		t.Fatalf("sessions' options after the first start: %q", got)
	}
	// The operator's choice for one option, and the other one gone.
	if _, err := db.SQL.ExecContext(ctx, `ALTER TABLE sessions SET (autovacuum_vacuum_scale_factor = 0.2)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL.ExecContext(ctx, `ALTER TABLE sessions RESET (autovacuum_vacuum_threshold)`); err != nil {
		t.Fatal(err)
	}
	var want string
	if err := db.SQL.QueryRowContext(ctx, "SHOW autovacuum").Scan(&want); err != nil {
		t.Fatal(err)
	}
	if off, err := db.AutovacuumOff(ctx); err != nil || off != (want == "off") {
		t.Errorf("AutovacuumOff: %v %v with autovacuum %s", off, err, want)
	}
	// The table's own autovacuum_enabled off counts as autovacuum off.
	if _, err := db.SQL.ExecContext(ctx, `ALTER TABLE sessions SET (autovacuum_enabled = off)`); err != nil {
		t.Fatal(err)
	}
	if off, err := db.AutovacuumOff(ctx); err != nil || !off {
		t.Errorf("AutovacuumOff with the table's autovacuum_enabled off: %v %v", off, err)
	}
	if _, err := db.SQL.ExecContext(ctx, `ALTER TABLE sessions RESET (autovacuum_enabled)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// A start that cannot have the table's lock in time leaves the options as they are and
	// starts all the same: a transaction holds SHARE UPDATE EXCLUSIVE as a VACUUM would.
	holder, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	tx, err := holder.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `LOCK TABLE sessions IN SHARE UPDATE EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	db = open()
	if got := options(db); strings.Contains(got, "autovacuum_vacuum_threshold") {
		t.Fatalf("options set past a held lock: %q", got)
	}
	db.Close()
	tx.Rollback()
	db = open()
	defer db.Close()
	got := options(db)
	if !strings.Contains(got, "autovacuum_vacuum_scale_factor=0.2") || !strings.Contains(got, "autovacuum_vacuum_threshold=1000") || strings.Contains(got, "0.01") {
		t.Fatalf("sessions' options after an operator's change and a start: %q", got)
	}
}
