package docs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// block is one fenced code block of a Markdown file.
type block struct {
	file   string
	line   int    // of the opening fence
	info   string // the fence's info string: "sh", "sh norun: needs …"
	text   string
	shell  bool   // sh, bash or shell: a block of commands
	norun  bool   // marked "norun: reason": not run by TestCommands
	reason string // why not
	// writeAs, for ```yaml file=NAME, is the name the runner writes the block under in
	// its working directory, for the blocks after it (a trap file the commands read).
	writeAs string
	// ci, for ```yaml ci, is a CI configuration (GitHub Actions, GitLab CI): the runner runs
	// its shell steps (run:, before_script:, script:), in order, as one sh block.
	ci bool
}

func (b block) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// docFiles are the documents whose commands are run: README.md and docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return append([]string{"../README.md"}, files...)
}

func parseBlocks(t *testing.T, path string) []block {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		out  []block
		cur  *block
		text strings.Builder
	)
	for i, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "```") {
			if cur != nil {
				text.WriteString(line + "\n")
			}
			continue
		}
		if cur != nil { // closing fence
			cur.text = text.String()
			out = append(out, *cur)
			cur = nil
			continue
		}
		info := strings.TrimSpace(strings.TrimPrefix(line, "```"))
		b := block{file: strings.TrimPrefix(path, "../"), line: i + 1, info: info}
		if f := strings.Fields(info); len(f) > 0 {
			switch f[0] {
			case "sh", "bash", "shell":
				b.shell = true
			}
			for _, w := range f[1:] {
				if name, ok := strings.CutPrefix(w, "file="); ok && f[0] == "yaml" {
					b.writeAs = name
				}
				if w == "ci" && f[0] == "yaml" {
					b.ci = true
				}
			}
			rest := strings.TrimSpace(strings.TrimPrefix(info, f[0]))
			if strings.HasPrefix(rest, "norun") {
				b.norun = true
				b.reason = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(rest, "norun"), ":"))
			}
		}
		cur = &b
		text.Reset()
	}
	if cur != nil {
		t.Fatalf("%s: the code block opened on line %d is never closed", path, cur.line)
	}
	return out
}

// looksLikeCommands spots a block that holds shell commands without saying so.
var looksLikeCommands = regexp.MustCompile(`(?m)^\s*(\$ )?(go|curl|flytrap|bash|npm|psql|FLYTRAP_[A-Z_]+=\S*)\s`)

// TestBlocksAreMarked: every block of commands is an sh block, so the runner sees it;
// the few that cannot run in a test say why (```sh norun: reason).
func TestBlocksAreMarked(t *testing.T) {
	runnable, skipped := 0, 0
	for _, f := range docFiles(t) {
		for _, b := range parseBlocks(t, f) {
			switch {
			case b.info == "" && looksLikeCommands.MatchString(b.text):
				t.Errorf("%s: a block of commands without an info string: mark it ```sh (or ```sh norun: reason), or ```text for a synopsis", b)
			case b.norun && !b.shell:
				t.Errorf("%s: norun on a %q block: only sh blocks run", b, b.info)
			case b.norun && len(b.reason) < 10:
				t.Errorf("%s: ```%s: say why the block cannot run in a test (```sh norun: reason)", b, b.info)
			case b.norun:
				skipped++
			case b.shell:
				runnable++
			case b.ci:
				if steps, err := ciSteps(b.text); err != nil || !strings.Contains(steps, "flytrap") {
					t.Errorf("%s: a ```yaml ci block whose steps do not read (%v) or run no flytrap:\n%s", b, err, steps)
				}
				runnable++
			}
		}
	}
	// The runner must have something to run: a parser that found nothing would pass vacuously.
	if runnable < 8 {
		t.Errorf("only %d runnable sh blocks found", runnable)
	}
	t.Logf("%d sh blocks run, %d marked norun", runnable, skipped)
}

// The placeholders the documents use for values only a running instance has. The runner
// puts the instance's values in their place; everything else runs as written.
const (
	apiAddr  = "127.0.0.1:8080"
	apiLocal = "localhost:8080"
	trapAddr = "127.0.0.1:8081"
)

// curlShim is the curl the blocks run: the real one, failing on an HTTP error status
// (--fail-with-body) and on a body that reports an error (GraphQL "errors", REST
// "success":false), which plain curl -s would let pass. A stream (-N) runs for 3 s.
const curlShim = `#!/usr/bin/env bash
out=$(mktemp)
trap 'rm -f "$out"' EXIT
limit=30 stream=0
for a in "$@"; do case $a in -N|--no-buffer) limit=3 stream=1;; esac; done
rc=0
"$FLYTRAP_DOCS_CURL" --fail-with-body --max-time "$limit" "$@" >"$out" || rc=$?
cat "$out"
if [[ $stream == 1 && $rc == 28 ]]; then rc=0; fi # a stream does not end: its first seconds are the test
if [[ $rc != 0 ]]; then echo "curl: exit status $rc" >&2; exit "$rc"; fi
if grep -q '"errors":\[' "$out" || grep -q '"success":false' "$out"; then
  echo "curl: the answer reports an error" >&2; exit 1
fi
if [[ $stream == 1 ]] && ! grep -q '^retry: ' "$out"; then
  echo "curl: the stream sent no retry hint" >&2; exit 1
fi
`

// goShim stands in for the go command: "go run ./cmd/flytrap ARGS" runs the binary the
// test built; anything else is not a command against an instance and must be norun.
const goShim = `#!/usr/bin/env bash
if [[ $1 == run && $2 == ./cmd/flytrap ]]; then shift 2; exec flytrap "$@"; fi
# A CI example installs the command; the one the test built is already on PATH.
if [[ $1 == install && $2 == github.com/flytrap/flytrap/cmd/flytrap@* ]]; then exit 0; fi
echo "docs test: only 'go run ./cmd/flytrap …' runs here; mark the block ` + "```sh norun: reason" + `" >&2
exit 1
`

// TestCommands runs every sh block of README.md and docs/*.md, in order, in its own
// bash (set -euo pipefail), against a fresh flytrap on free ports. The environment has
// KEY (the admin key of the first start), API and TRAPS (base URLs) and FLYTRAP_DB (the
// instance's database, for the management commands).
func TestCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the run of the documents' commands against a built flytrap")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		ft.Skip(t, "documents' commands", "install bash and curl", "bash is not installed")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		ft.Skip(t, "documents' commands", "install bash and curl", "curl is not installed")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build flytrap with: %v", err)
	}
	tmp := t.TempDir()
	binDir := filepath.Join(tmp, "bin")
	work := filepath.Join(tmp, "work")
	for _, d := range []string{binDir, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(binDir, "flytrap")
	if out, err := exec.Command(goTool, "build", "-o", bin, "../cmd/flytrap").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for name, body := range map[string]string{"curl": curlShim, "go": goShim} {
		if err := os.WriteFile(filepath.Join(binDir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}

	inst := startInstance(t, bin, tmp)
	fx := inst.fixtures(t)

	replacer := strings.NewReplacer(
		"http://"+apiAddr, inst.api,
		apiLocal, strings.TrimPrefix(inst.api, "http://"),
		apiAddr, strings.TrimPrefix(inst.api, "http://"),
		"http://"+trapAddr, inst.traps,
		trapAddr, strings.TrimPrefix(inst.traps, "http://"),
		"ftk_…", inst.key,
		"org_…", fx.orgID,
		"key_01m8…", fx.spareKeyID,
		"trp_…", fx.trapID,
		"ses_…", fx.sessionID,
		"<next_cursor>", fx.cursor,
		"<id of the last message>", fx.cursor,
	)
	env := []string{
		"PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + work,
		"LANG=C.UTF-8",
		"FLYTRAP_DOCS_CURL=" + curl,
		"FLYTRAP_DB=" + inst.db,
		// A block that starts a server gets free ports (and then its time limit), never 8080.
		"FLYTRAP_API_ADDR=127.0.0.1:0",
		"FLYTRAP_TRAP_ADDR=127.0.0.1:0",
		"KEY=" + inst.key,
		// The API client's commands (flytrap traps …) reach the instance as its admin.
		"FLYTRAP_URL=" + inst.api,
		"FLYTRAP_API_KEY=" + inst.key,
		"API=" + inst.api,
		"TRAPS=" + inst.traps,
	}
	ran := 0
	for _, f := range docFiles(t) {
		for _, b := range parseBlocks(t, f) {
			if b.writeAs != "" {
				if err := os.WriteFile(filepath.Join(work, b.writeAs), []byte(replacer.Replace(b.text)), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if (!b.shell && !b.ci) || b.norun {
				continue
			}
			ran++
			script := replacer.Replace(b.text)
			if b.ci {
				steps, err := ciSteps(b.text)
				if err != nil {
					t.Errorf("%s: %v", b, err)
					continue
				}
				script = replacer.Replace(steps)
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			cmd := exec.CommandContext(ctx, bash, "-c", "set -euo pipefail\n"+script)
			cmd.Dir, cmd.Env = work, env
			// At the time limit the block's whole process group ends, and its pipes with it.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			cmd.WaitDelay = 5 * time.Second
			out, err := cmd.CombinedOutput()
			cancel()
			if err != nil {
				t.Errorf("%s: %v\n--- block (as run)\n%s--- output\n%s", b, err, script, out)
			}
		}
	}
	if ran == 0 {
		t.Fatal("no sh block ran")
	}
	if err := inst.stop(); err != nil {
		t.Errorf("flytrap: %v\nstderr: %s", err, inst.stderr)
	}
}

// instance is a flytrap process serving a fresh database.
type instance struct {
	api, traps, key, db string
	stderr              *syncBuffer
	stop                func() error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var bannerKey = regexp.MustCompile(`(?m)^\s+(ftk_[0-9A-Za-z]+)\s*$`)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startInstance(t *testing.T, bin, dir string) *instance {
	t.Helper()
	api, traps := freeAddr(t), freeAddr(t)
	in := &instance{api: "http://" + api, traps: "http://" + traps, db: filepath.Join(dir, "flytrap.db"), stderr: &syncBuffer{}}
	cmd := exec.Command(bin, "--db", in.db, "--api-addr", api, "--trap-addr", traps, "--log-format", "json")
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FLYTRAP_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stdout syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, in.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	in.stop = func() error {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			return err
		case <-time.After(30 * time.Second):
			return errors.New("still running 30s after SIGINT")
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m := bannerKey.FindStringSubmatch(stdout.String()); m != nil && healthy(in.api) {
			in.key = m[1]
			return in
		}
		select {
		case err := <-exited:
			t.Fatalf("flytrap exited: %v\nstderr: %s", err, in.stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("flytrap not ready after 60s\nstdout: %s\nstderr: %s", &stdout, in.stderr)
		}
	}
}

func healthy(base string) bool {
	res, err := http.Get(base + "/healthz")
	if err != nil {
		return false
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode == http.StatusOK
}

// fixtures are the ids the documents' placeholders stand for.
type fixtures struct {
	orgID, trapID, sessionID, cursor, spareKeyID string
}

// call sends a JSON request to the API as the admin and decodes the answer into out.
func (in *instance) call(t *testing.T, method, path string, body any, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(t.Context(), method, in.api+path, rd)
	req.Header.Set("Authorization", "Bearer "+in.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("%s %s: %v: %s", method, path, err, raw)
	}
}

// fixtures makes what the placeholders name: a trap, a session on another trap (a
// visit to it), an event cursor and a spare key to revoke.
func (in *instance) fixtures(t *testing.T) fixtures {
	t.Helper()
	var fx fixtures
	var trap struct {
		Data struct{ ID, Path string } `json:"data"`
	}
	in.call(t, http.MethodPost, "/dashboard/api/traps", map[string]any{"name": "Docs fixture", "type": "page"}, &trap)
	fx.trapID = trap.Data.ID
	in.call(t, http.MethodPost, "/dashboard/api/traps", map[string]any{"name": "Visited", "type": "page", "path": "/docs-fixture/visited"}, &trap)
	req, _ := http.NewRequest(http.MethodGet, in.traps+trap.Data.Path, nil)
	req.Header.Set("User-Agent", "python-requests/2.32.3")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("visiting the trap: %v", err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	deadline := time.Now().Add(30 * time.Second)
	for fx.sessionID == "" {
		var sessions struct {
			Data []struct{ ID string } `json:"data"`
		}
		in.call(t, http.MethodGet, "/dashboard/api/sessions", nil, &sessions)
		if len(sessions.Data) > 0 {
			fx.sessionID = sessions.Data[0].ID
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the visit made no session within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	var events struct {
		Next string `json:"next_cursor"`
	}
	in.call(t, http.MethodGet, "/api/v1/events", nil, &events)
	fx.cursor = events.Next

	// The spare key belongs to the first organization: another organization would bring a
	// second site, and the trap listener routes any host only while there is one.
	var org string
	for _, line := range strings.Split(run(t, in, "orgs", "list"), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "org_") {
			org = f[0]
		}
	}
	fx.orgID = org
	run(t, in, "keys", "create", "--org", org, "--name", "to revoke", "--scope", "read-only")
	list := run(t, in, "keys", "list", "--org", org)
	sc := bufio.NewScanner(strings.NewReader(list))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 0 && strings.HasPrefix(f[0], "key_") {
			fx.spareKeyID = f[0]
		}
	}
	for name, v := range map[string]string{"organization": fx.orgID, "trap": fx.trapID, "session": fx.sessionID, "cursor": fx.cursor, "spare key": fx.spareKeyID} {
		if v == "" {
			t.Fatalf("no %s for the placeholders", name)
		}
	}
	return fx
}

// run runs a management command of the built binary on the instance's database.
func run(t *testing.T, in *instance, args ...string) string {
	t.Helper()
	bin := filepath.Join(filepath.Dir(in.db), "bin", "flytrap")
	out, err := exec.Command(bin, append(args, "--db", in.db)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("flytrap %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// ciSteps is the shell of a CI configuration, in document order: GitHub Actions' run:
// steps and GitLab CI's before_script: and script: lines, one after the other.
func ciSteps(text string) (string, error) {
	var doc yaml.MapSlice
	if err := yaml.UnmarshalWithOptions([]byte(text), &doc, yaml.UseOrderedMap()); err != nil {
		return "", err
	}
	var b strings.Builder
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch x := v.(type) {
		case yaml.MapSlice:
			for _, it := range x {
				k, _ := it.Key.(string)
				walk(k, it.Value)
			}
		case []any:
			for _, e := range x {
				if s, ok := e.(string); ok && (key == "script" || key == "before_script") {
					b.WriteString(s + "\n")
					continue
				}
				walk(key, e)
			}
		case string:
			if key == "run" || key == "script" || key == "before_script" {
				b.WriteString(x + "\n")
			}
		}
	}
	walk("", doc)
	return b.String(), nil
}
