package store_test

import (
	"fmt"
	"strings"
	"testing"

	"entgo.io/ent/dialect"

	"github.com/flytrap/flytrap/ent/organization"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/store"
)

// Transactions under store.Prepared run their statements prepared: ent's own and raw
// ones, in many transactions, past the cache's bound, and a rolled-back one leaves nothing.
func TestPreparedTransactions(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		db, err := store.Open(t.Context(), b.DSN(t))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		ctx := store.Prepared(ft.System())
		ph := func(i int) string { return ph(db, i) }
		// 300 distinct texts (more than are kept prepared), each run in three transactions.
		for round := range 3 {
			tx, err := db.Client.Tx(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 300 {
				q := fmt.Sprintf("UPDATE organizations SET name = %s WHERE id = %s AND %d = %d", ph(1), ph(2), i, i)
				if _, err := tx.Client().ExecContext(ctx, q, "x", "none"); err != nil {
					t.Fatalf("round %d, statement %d: %v", round, i, err)
				}
			}
			org, err := tx.Organization.Create().SetName(fmt.Sprintf("org %d", round)).Save(ctx)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := tx.Client().QueryContext(ctx, "SELECT name FROM organizations WHERE id = "+ph(1), org.ID)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for rows.Next() {
				var n string
				if err := rows.Scan(&n); err != nil {
					t.Fatal(err)
				}
				names = append(names, n)
			}
			rows.Close()
			if strings.Join(names, ",") != fmt.Sprintf("org %d", round) {
				t.Fatalf("read back %q in the transaction", names)
			}
			if db.Dialect == dialect.Postgres {
				// The statements stay prepared on the transaction's connection, up to the bound.
				// PostgreSQL lists them (SQLite's sqlite_stmt table is not compiled in).
				count := "SELECT COUNT(*) FROM pg_prepared_statements WHERE statement LIKE 'UPDATE organizations%'"
				var prepared int
				crows, err := tx.Client().QueryContext(ctx, count) // unprepared: the cache is full
				if err != nil {
					t.Fatal(err)
				}
				for crows.Next() {
					if err := crows.Scan(&prepared); err != nil {
						t.Fatal(err)
					}
				}
				crows.Close()
				if prepared < 200 || prepared > 256 {
					t.Fatalf("%d statements prepared on the connection, want the bound's worth", prepared)
				}
			}
			if round == 2 {
				if err := tx.Rollback(); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		if n := db.Client.Organization.Query().CountX(ft.System()); n != 2 {
			t.Fatalf("%d organizations, want the 2 committed", n)
		}
		// A statement that cannot be prepared fails its transaction with the database's error.
		tx, err := db.Client.Tx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.Client().ExecContext(ctx, "UPDATE no_such_table SET x = 1"); err == nil || !strings.Contains(err.Error(), "no_such_table") {
			t.Fatalf("bad statement: %v", err)
		}
	})
}

// ph is db's i-th placeholder.
func ph(db *store.DB, i int) string {
	if db.Dialect == dialect.Postgres {
		return fmt.Sprintf("$%d", i)
	}
	return "?"
}

// Statements outside transactions (the API's reads) are prepared the second time they
// run and give the same answers; a script still runs whole, a bad statement fails with
// the database's error every time, and texts past the bound run unprepared.
func TestPreparedReads(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		db, err := store.Open(t.Context(), b.DSN(t))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		db.SQL.SetMaxOpenConns(1) // one connection, so PostgreSQL's pg_prepared_statements shows them all
		ctx := ft.System()
		org := db.Client.Organization.Create().SetName("acme").SaveX(ctx)
		for i := range 3 {
			got, err := db.Client.Organization.Query().Where(organization.ID(org.ID)).Only(ctx)
			if err != nil || got.Name != "acme" {
				t.Fatalf("read %d: %v, %v", i, got, err)
			}
			if _, err := db.Client.ExecContext(ctx, "UPDATE organizations SET name = 'acme' WHERE id = "+ph(db, 1), org.ID); err != nil {
				t.Fatal(err)
			}
		}
		if db.Dialect == dialect.Postgres {
			var n int
			q := "SELECT COUNT(*) FROM pg_prepared_statements WHERE statement LIKE 'SELECT %organizations%' OR statement LIKE 'UPDATE %organizations%'"
			if err := db.SQL.QueryRowContext(ctx, q).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 2 {
				t.Fatalf("%d of the read and the update prepared, want both", n)
			}
		}
		// A script of two statements, three times: each run applies both.
		script := "UPDATE organizations SET name = 'one' WHERE id = '" + org.ID + "'; UPDATE organizations SET name = name || '+two' WHERE id = '" + org.ID + "'"
		for i := range 3 {
			if _, err := db.Client.ExecContext(ctx, script); err != nil {
				t.Fatalf("script, run %d: %v", i, err)
			}
			if got := db.Client.Organization.GetX(ctx, org.ID).Name; got != "one+two" {
				t.Fatalf("script, run %d: name %q", i, got)
			}
		}
		for i := range 3 {
			_, err := db.Client.QueryContext(ctx, "SELECT x FROM no_such_table")
			if err == nil || !strings.Contains(err.Error(), "no_such_table") {
				t.Fatalf("bad statement, run %d: %v", i, err)
			}
		}
		// 300 texts twice each: past the bound they run unprepared, with the same answers.
		for round := range 2 {
			for i := range 300 {
				var name string
				rows, err := db.Client.QueryContext(ctx, fmt.Sprintf("SELECT name FROM organizations WHERE %d = %d", i, i))
				if err != nil {
					t.Fatalf("round %d, text %d: %v", round, i, err)
				}
				for rows.Next() {
					if err := rows.Scan(&name); err != nil {
						t.Fatal(err)
					}
				}
				rows.Close()
				if name != "one+two" {
					t.Fatalf("round %d, text %d: %q", round, i, name)
				}
			}
		}
	})
}
