package server

import (
	"path/filepath"
	"strings"
	"testing"

	"entgo.io/ent/dialect"

	"github.com/flytrap/flytrap/store"
)

// The hit journal's directory: the setting's, none for "off", beside a SQLite file, and on
// PostgreSQL one per database and trap address, the same at every start.
func TestJournalDir(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	sqlite := &store.DB{Dialect: dialect.SQLite, DSN: "file:/var/lib/flytrap/flytrap.db?_pragma=foreign_keys(1)"}
	pg := &store.DB{Dialect: dialect.Postgres, DSN: "postgres://flytrap:secret@db.internal:5432/flytrap?sslmode=require"}
	other := &store.DB{Dialect: dialect.Postgres, DSN: "postgres://flytrap:other@db.internal:5432/staging"}
	dir := func(setting string, db *store.DB, addr string) string {
		t.Helper()
		d, err := journalDir(setting, db, addr)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := dir("/srv/hits", pg, ":8081"); d != "/srv/hits" {
		t.Errorf("the setting's directory: %q", d)
	}
	if d := dir("off", sqlite, ":8081"); d != "" {
		t.Errorf("off: %q", d)
	}
	if d := dir("", sqlite, ":8081"); d != "/var/lib/flytrap/flytrap.db.hits" {
		t.Errorf("beside the SQLite file: %q", d)
	}
	if d := dir("", &store.DB{Dialect: dialect.SQLite, DSN: "file::memory:?cache=shared"}, ":8081"); d != "" {
		t.Errorf("an in-memory database: %q", d)
	}
	a, b, again := dir("", pg, ":8081"), dir("", pg, ":8083"), dir("", pg, ":8081")
	if a == b || a != again || dir("", other, ":8081") == a {
		t.Errorf("instances' directories: %q, %q, again %q", a, b, again)
	}
	if !strings.HasPrefix(filepath.Base(a), "hits-flytrap-") || strings.Contains(a, "secret") {
		t.Errorf("named %q", a)
	}
}
