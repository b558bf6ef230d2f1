package testdb

import (
	"bytes"
	"os/exec"
	"reflect"
	"strings"
	"syscall"
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

// `go test` on a package with a skipped group, its output piped and no terminal (as in CI),
// prints the summary line although the package passed and -v is not given.
func TestSummaryWhenPiped(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	var out bytes.Buffer
	cmd := exec.Command(goBin, "test", "-count=1", "./testdata/skipdemo")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal, as in CI
	if err := cmd.Run(); err != nil {
		t.Fatalf("go test: %v\n%s", err, out.String())
	}
	want := "flytrap skipdemo: demo group: skipped 1 test; to run them, install the demo"
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "ok ") {
		t.Fatalf("piped output lacks the summary %q:\n%s", want, out.String())
	}
}
