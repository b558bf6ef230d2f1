package testdb

import (
	"reflect"
	"testing"
)

func TestSummary(t *testing.T) {
	skips.Lock()
	saved := skips.groups
	skips.groups = map[string]*skipGroup{}
	skips.Unlock()
	t.Cleanup(func() { skips.Lock(); skips.groups = saved; skips.Unlock() })

	if got := summary("server.test"); len(got) != 0 {
		t.Fatalf("nothing skipped: %q", got)
	}
	note(GroupPostgres, postgresHow, "TestA/sqlite", true)
	note(GroupPostgres, postgresHow, "TestA/sqlite", true) // one test, counted once
	note(GroupPostgres, postgresHow, "TestB", true)
	note(GroupPostgres, postgresHow, "TestC", false)
	note("real browser", "run `bash scripts/install-chromium.sh`", "TestD", false)
	want := []string{
		"flytrap server: PostgreSQL: skipped 1 test and ran 2 tests on SQLite only; to run them, " + postgresHow,
		"flytrap server: real browser: skipped 1 test; to run them, run `bash scripts/install-chromium.sh`",
	}
	if got := summary("server.test"); !reflect.DeepEqual(got, want) {
		t.Errorf("summary =\n%q\nwant\n%q", got, want)
	}
}
