package testdb

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A plain `go test ./...` shows nothing of a package that passed, skips included, so a
// machine without PostgreSQL or the browser setup would pass a smaller suite without a
// word. Tests that need such a thing skip through Skip (ForEachBackend notes the
// PostgreSQL runs it leaves out), and Main prints one line per group at the end.

// Groups of tests that need something a machine may lack, and how to enable them.
const (
	GroupPostgres = "PostgreSQL"
)

var skips = struct {
	sync.Mutex
	groups map[string]*skipGroup
}{groups: map[string]*skipGroup{}}

type skipGroup struct {
	how     string
	skipped map[string]bool // top-level test names
	partial map[string]bool // tests that ran, but without this group's part
}

func note(group, how, test string, partial bool) {
	skips.Lock()
	defer skips.Unlock()
	g := skips.groups[group]
	if g == nil {
		g = &skipGroup{how: how, skipped: map[string]bool{}, partial: map[string]bool{}}
		skips.groups[group] = g
	}
	test, _, _ = strings.Cut(test, "/")
	if partial {
		g.partial[test] = true
	} else {
		g.skipped[test] = true
	}
}

// Skip skips t, which needs what group names; how says how to enable it (an
// environment variable, a setup script). Main's summary counts it.
func Skip(t testing.TB, group, how, reason string) {
	t.Helper()
	note(group, how, t.Name(), false)
	t.Skip(reason + ": " + how)
}

// postgresHow is how to enable the PostgreSQL runs.
const postgresHow = "set " + PostgresEnv + "='postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable' (a user with CREATEDB)"

// Main runs the package's tests, reports the groups of tests that were skipped or
// ran only in part, and exits. Call it from TestMain.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main without the exit, for a TestMain with more to do.
func Run(m *testing.M) int {
	code := m.Run()
	report(summary(filepath.Base(os.Args[0])))
	return code
}

// summary is one line per group, sorted; none when nothing was left out.
func summary(binary string) []string {
	pkg := strings.TrimSuffix(strings.TrimSuffix(binary, ".exe"), ".test")
	skips.Lock()
	defer skips.Unlock()
	var lines []string
	for name, g := range skips.groups {
		var parts []string
		if n := len(g.skipped); n > 0 {
			parts = append(parts, fmt.Sprintf("skipped %d %s", n, plural(n, "test")))
		}
		if n := len(g.partial); n > 0 {
			parts = append(parts, fmt.Sprintf("ran %d %s on SQLite only", n, plural(n, "test")))
		}
		lines = append(lines, fmt.Sprintf("flytrap %s: %s: %s; to run them, %s", pkg, name, strings.Join(parts, " and "), g.how))
	}
	sort.Strings(lines)
	return lines
}

func plural(n int, s string) string {
	if n == 1 {
		return s
	}
	return s + "s"
}

// report writes the summary where it is seen: go test shows a passing package's output
// only with -v, so without -v the lines go around it, to the go command's own standard error
// (the test binary's parent's: a terminal, or CI's piped log alike), or else to the terminal.
func report(lines []string) {
	if len(lines) == 0 {
		return
	}
	var w io.Writer = os.Stderr
	if !testing.Verbose() {
		if out := outside(); out != nil {
			defer out.Close()
			w = out
		}
	}
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// outside opens where the person or CI running go test reads: the parent process's standard
// error (Linux's /proc), or the controlling terminal; nil when neither can be opened.
func outside() *os.File {
	if parentStderrSafe() {
		if f, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/2", os.Getppid()), os.O_WRONLY|os.O_APPEND, 0); err == nil {
			return f
		}
	}
	if f, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		return f
	}
	return nil
}

// parentStderrSafe reports whether writing to the parent's standard error through a new
// descriptor lands after what the parent writes: a pipe or a terminal, or a file the parent
// appends to. A file it overwrites from its own offset (`go test ./... > log`) would write
// over the lines, so they go elsewhere.
func parentStderrSafe() bool {
	path := fmt.Sprintf("/proc/%d/fd/2", os.Getppid())
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	if !fi.Mode().IsRegular() {
		return true // a pipe, a terminal, /dev/null
	}
	info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/2", os.Getppid()))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(info), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			return err == nil && flags&uint64(os.O_APPEND) != 0
		}
	}
	return false
}
