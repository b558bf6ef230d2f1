package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// clientRun is one run of the built binary as an API client.
type clientRun struct {
	stdout, stderr string
	code           int
}

// clientEnv runs the built binary with FLYTRAP_URL and FLYTRAP_API_KEY set (and no other
// FLYTRAP_ variable, a config directory of its own).
type clientEnv struct {
	t        *testing.T
	bin      string
	url, key string
	config   string // XDG_CONFIG_HOME
}

func (e *clientEnv) run(args ...string) clientRun {
	return e.runIn(nil, args...)
}

func (e *clientEnv) runIn(stdin []byte, args ...string) clientRun {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, args...)
	cmd.Env = append(withoutFlytrapVars(os.Environ()), "XDG_CONFIG_HOME="+e.config)
	if e.url != "" {
		cmd.Env = append(cmd.Env, "FLYTRAP_URL="+e.url)
	}
	if e.key != "" {
		cmd.Env = append(cmd.Env, "FLYTRAP_API_KEY="+e.key)
	}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := clientRun{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		e.t.Fatalf("flytrap %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// must runs args and wants exit status 0.
func (e *clientEnv) must(args ...string) string {
	e.t.Helper()
	r := e.run(args...)
	if r.code != 0 {
		e.t.Fatalf("flytrap %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// want runs args and wants exit status code, and stderr holding each of mention.
func (e *clientEnv) want(code int, args []string, mention ...string) clientRun {
	e.t.Helper()
	r := e.run(args...)
	if r.code != code {
		e.t.Errorf("flytrap %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	for _, m := range mention {
		if !strings.Contains(r.stderr, m) {
			e.t.Errorf("flytrap %s: stderr %q does not say %q", strings.Join(args, " "), r.stderr, m)
		}
	}
	return r
}

// traps is flytrap traps list -o json.
func (e *clientEnv) traps(args ...string) []map[string]any {
	e.t.Helper()
	var out []map[string]any
	if err := json.Unmarshal([]byte(e.must(append([]string{"traps", "list", "-o", "json"}, args...)...)), &out); err != nil {
		e.t.Fatalf("traps list -o json: %v", err)
	}
	return out
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const trapsV1 = `sites:
  - site: default
    traps:
      - path: /admin/login
        name: Admin login
        type: page
      - path: /api/v2/internal
        name: Internal API
        type: api
        description: looks internal
        public_title: Partner API reference
      - path: /old
        name: Old
        type: robots
`

// Renames one, changes the type of another (a replace), drops /old and adds an inactive one.
const trapsV2 = `sites:
  - site: default
    traps:
      - path: /admin/login
        name: Admin sign-in
        type: page
        public_title: Staff sign-in
      - path: /api/v2/internal
        name: Internal API
        type: mcp
        description: looks internal
        public_title: Partner API reference
      - path: /staging
        name: Staging
        type: page
        active: false
`

// TestClientEndToEnd drives every API client command through the built binary against a
// running flytrap serve, on each database: traps as code (validate, plan, apply twice,
// a change with --prune), the trap commands, the 409 naming the trap in the way, sessions
// from a real hit, events list and tail (resuming across a restart of the service), keys,
// a profile file, version, the exit codes, and the deprecated database spellings.
func TestClientEndToEnd(t *testing.T) {
	bin := flytrapBinary(t)
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		dir := t.TempDir()
		apiAddr, trapAddr := freeAddr(t), freeAddr(t)
		serveArgs := []string{"--db", dsn, "--api-addr", apiAddr, "--trap-addr", trapAddr}
		base, key, stop := startBinary(t, bin, dir, serveArgs...)
		if key == "" {
			t.Fatal("the first start printed no key")
		}
		e := &clientEnv{t: t, bin: bin, url: base, key: key, config: t.TempDir()}

		// version: the version, a commit line when built from a checkout, the Go version.
		if v := e.must("version"); !strings.HasPrefix(v, "flytrap ") || !strings.Contains(v, "go1.") {
			t.Errorf("version printed %q", v)
		}
		var info map[string]any
		if err := json.Unmarshal([]byte(e.must("version", "-o", "json")), &info); err != nil || info["version"] == "" || info["go"] == nil {
			t.Errorf("version -o json: %v %v", info, err)
		}

		// validate needs no server; a wrong file exits 6 naming each problem.
		v1 := writeFile(t, dir, "v1.yaml", trapsV1)
		offline := &clientEnv{t: t, bin: bin, config: e.config}
		if out := offline.must("validate", "-f", v1); !strings.Contains(out, "valid, 3 trap(s) on 1 site(s)") {
			t.Errorf("validate: %q", out)
		}
		bad := writeFile(t, dir, "bad.yaml", "sites:\n  - site: default\n    traps:\n      - {path: no-slash, name: x, type: page}\n      - {path: /a, name: '', type: nope}\n      - {path: /a, name: y, type: page}\n")
		offline.want(exitInvalid, []string{"validate", "-f", bad}, "traps[0] (no-slash).path", "traps[1] (/a).name", `"nope" is not a trap type`, "also the path of traps[1]")
		offline.want(exitInvalid, []string{"validate", "-f", writeFile(t, dir, "typo.yaml", "sites:\n  - site: default\n    trapz: []\n")}, "trapz")

		// plan, apply, apply again: the second apply changes nothing.
		if out := e.must("plan", "-f", v1); !strings.Contains(out, "Plan: 3 to create, 0 to update, 0 to replace, 0 to delete; 0 unchanged.") {
			t.Errorf("plan:\n%s", out)
		}
		if len(e.traps()) != 0 {
			t.Fatal("plan changed something")
		}
		if out := e.must("apply", "-f", v1); !strings.Contains(out, "Applied: 3 to create") || !strings.Contains(out, "+   create") {
			t.Errorf("apply:\n%s", out)
		}
		first := e.traps()
		if len(first) != 3 {
			t.Fatalf("after apply: %d traps, want 3", len(first))
		}
		for _, args := range [][]string{{"apply", "-f", v1}, {"plan", "-f", v1}, {"apply", "-f", v1, "--prune"}} {
			if out := e.must(args...); !strings.Contains(out, "No changes: the service's traps match the file (3).") {
				t.Errorf("%v a second time:\n%s", args, out)
			}
		}
		var plan struct {
			Changes   []map[string]any `json:"changes"`
			Unchanged int              `json:"unchanged"`
		}
		// -f - reads standard input; an empty file is no list of sites (exit 6).
		if r := e.runIn([]byte(trapsV1), "plan", "-f", "-"); r.code != 0 || !strings.Contains(r.stdout, "No changes") {
			t.Errorf("plan -f - with the same file: %+v", r)
		}
		if r := e.runIn([]byte{}, "plan", "-f", "-"); r.code != exitInvalid || !strings.Contains(r.stderr, "lists no site") {
			t.Errorf("plan -f - of nothing: %+v", r)
		}
		v2 := writeFile(t, dir, "v2.yaml", trapsV2)
		if err := json.Unmarshal([]byte(e.must("plan", "-f", v2, "--prune", "-o", "json")), &plan); err != nil {
			t.Fatal(err)
		}
		actions := map[string]string{}
		for _, c := range plan.Changes {
			actions[c["path"].(string)] = c["action"].(string)
		}
		if want := map[string]string{"/admin/login": "update", "/api/v2/internal": "replace", "/staging": "create", "/old": "delete"}; !equalMaps(actions, want) {
			t.Errorf("plan --prune: %v, want %v", actions, want)
		}
		// Without --prune /old stays.
		e.must("apply", "-f", v2)
		if n := len(e.traps("--path", "/old")); n != 1 {
			t.Errorf("apply without --prune: /old has %d traps, want 1", n)
		}
		e.must("apply", "-f", v2, "--prune")
		after := e.traps()
		byPath := map[string]map[string]any{}
		for _, tr := range after {
			byPath[tr["path"].(string)] = tr
		}
		if len(after) != 3 || byPath["/admin/login"]["name"] != "Admin sign-in" || byPath["/api/v2/internal"]["type"] != "mcp" ||
			byPath["/staging"]["active"] != float64(0) || byPath["/old"] != nil ||
			byPath["/admin/login"]["public_title"] != "Staff sign-in" || byPath["/api/v2/internal"]["public_title"] != "Partner API reference" {
			t.Errorf("after apply --prune: %v", after)
		}
		if byPath["/admin/login"]["id"] != first[0]["id"] {
			t.Errorf("the update made a new trap: %v, was %v", byPath["/admin/login"]["id"], first[0]["id"])
		}
		if out := e.must("apply", "-f", v2, "--prune"); !strings.Contains(out, "No changes") {
			t.Errorf("apply v2 again:\n%s", out)
		}

		// The trap commands; a path another active trap holds is a 409 naming it (exit 5).
		login := byPath["/admin/login"]["id"].(string)
		e.want(exitConflict, []string{"traps", "create", "--name", "dup", "--type", "page", "--path", "/admin/login"}, login)
		var made map[string]any
		if err := json.Unmarshal([]byte(e.must("traps", "create", "--name", "Wiki", "--type", "llms_txt", "--path", "/wiki/llms.txt", "-o", "json")), &made); err != nil {
			t.Fatal(err)
		}
		id := made["id"].(string)
		if out := e.must("traps", "get", id); !strings.Contains(out, "Wiki") || !strings.Contains(out, "llms_txt") || !strings.HasPrefix(out, "ID ") {
			t.Errorf("traps get (table):\n%s", out)
		}
		e.must("traps", "update", id, "--name", "Wiki 2", "--active", "false")
		if got := e.traps("--type", "llms_txt", "--active", "false"); len(got) != 1 || got[0]["name"] != "Wiki 2" {
			t.Errorf("after update: %v", got)
		}
		nd := e.must("traps", "list", "-o", "ndjson")
		if lines := strings.Split(strings.TrimSpace(nd), "\n"); len(lines) != 4 {
			t.Errorf("traps list -o ndjson: %d lines, want 4:\n%s", len(lines), nd)
		}
		e.must("traps", "delete", id)
		// An Idempotency-Key makes a retried create answer the first trap again.
		idem := []string{"traps", "create", "--name", "Idem", "--type", "page", "--path", "/idem", "--idempotency-key", "cli-1", "-o", "json"}
		firstIdem, again := e.run(idem...), e.run(idem...)
		if firstIdem.code != 0 || again.code != 0 || firstIdem.stdout != again.stdout || !strings.Contains(again.stderr, "replayed") {
			t.Errorf("traps create with an Idempotency-Key twice: %+v then %+v", firstIdem, again)
		}
		e.want(exitConflict, []string{"traps", "create", "--name", "Other", "--type", "page", "--path", "/idem-2", "--idempotency-key", "cli-1"}, "different request")
		if n := len(e.traps("--path", "/idem")); n != 1 {
			t.Errorf("%d traps at /idem, want 1", n)
		}
		e.want(exitNotFound, []string{"traps", "get", id}, "not found")
		e.want(exitNotFound, []string{"traps", "delete", id}, "404")
		e.want(exitUsage, []string{"traps", "get"}, "usage: flytrap traps get TRAP_ID")
		e.want(exitUsage, []string{"traps", "list", "-o", "yaml"}, "not an output format")
		e.want(exitInvalid, []string{"traps", "create", "--name", "x", "--type", "nope"}, "type")

		// A hit on a trap makes a session; sessions list and show read it.
		res, err := http.Get("http://" + trapAddr + "/admin/login")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		var sessions []map[string]any
		for deadline := time.Now().Add(30 * time.Second); len(sessions) == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if err := json.Unmarshal([]byte(e.must("sessions", "list", "-o", "json", "--since", "1h")), &sessions); err != nil {
				t.Fatal(err)
			}
		}
		if len(sessions) != 1 {
			t.Fatalf("sessions list: %v", sessions)
		}
		sid := sessions[0]["id"].(string)
		if out := e.must("sessions", "show", sid); !strings.Contains(out, sid) || !strings.Contains(out, "hits") {
			t.Errorf("sessions show:\n%s", out)
		}
		var detail map[string]any
		if err := json.Unmarshal([]byte(e.must("sessions", "show", sid, "-o", "json")), &detail); err != nil || detail["id"] != sid {
			t.Errorf("sessions show -o json: %v %v", detail, err)
		}
		if out := e.must("sessions", "list", "--trap", login); !strings.Contains(out, sid) {
			t.Errorf("sessions list --trap: %s", out)
		}

		// The gate: the open session fails it at its own severity (exit 8, the session listed),
		// passes above it; resolved, the session no longer fails it.
		sev := strings.ToLower(sessions[0]["severity"].(string))
		if r := e.want(exitGateFailed, []string{"gate", "--fail-on", sev, "--since", "1h"}, "gate failed: 1 unresolved session(s) at "+sev); !strings.Contains(r.stdout, sid) {
			t.Errorf("gate failed without listing %s:\n%s", sid, r.stdout)
		}
		if sev != "critical" {
			e.want(0, []string{"gate", "--fail-on", "critical"}, "gate passed")
		}
		var answer map[string]any
		gr := e.want(exitGateFailed, []string{"gate", "--fail-on", "low", "-o", "json"})
		if err := json.Unmarshal([]byte(gr.stdout), &answer); err != nil || answer["failed"] != true || answer["count"] != float64(1) {
			t.Errorf("gate -o json: %v %v", answer, err)
		}
		e.want(exitUsage, []string{"gate"}, "--fail-on is required")
		e.want(exitInvalid, []string{"gate", "--fail-on", "low", "--since", "yesterday"}, "since")
		e.want(exitUsage, []string{"sessions", "triage", "--state", "resolved"}, "usage")
		if r := e.want(0, []string{"sessions", "triage", sid, sid, "--state", "resolved"}, "1 of 1 sessions changed to resolved"); !strings.Contains(r.stdout, "resolved") {
			t.Errorf("sessions triage:\n%s", r.stdout)
		}
		e.want(0, []string{"sessions", "triage", "--state", "resolved", sid}, "0 of 1 sessions changed")
		e.want(0, []string{"gate", "--fail-on", "low", "--since", "1h"}, "gate passed")
		e.want(exitNotFound, []string{"sessions", "triage", "--state", "open", "ses_00000000000000000000000000"})

		// events list: the trap events of the above, oldest first.
		evs := e.must("events", "list", "-o", "ndjson", "--type", "trap.created", "--limit", "100")
		if n := strings.Count(evs, `"type":"trap.created"`); n != 7 { // 3 + /staging + the replaced one + Wiki + Idem
			t.Errorf("events list --type trap.created: %d, want 7:\n%s", n, evs)
		}
		// -o ecs: the same events as ECS-named NDJSON, the webhook format's documents.
		ecsLines := strings.Split(strings.TrimSpace(e.must("events", "list", "-o", "ecs", "--type", "trap.created", "--limit", "100")), "\n")
		if len(ecsLines) != 7 {
			t.Errorf("events list -o ecs: %d lines, want 7", len(ecsLines))
		}
		for _, l := range ecsLines {
			var doc map[string]any
			if err := json.Unmarshal([]byte(l), &doc); err != nil || ft.Dig(doc, "event", "action") != "trap.created" ||
				ft.Dig(doc, "ecs", "version") == nil || doc["@timestamp"] == nil || ft.Dig(doc, "event", "id") == nil {
				t.Errorf("events list -o ecs: %s (%v)", l, err)
			}
		}
		e.want(exitUsage, []string{"traps", "list", "-o", "ecs"}, "-o ecs is an output of events")

		// events tail follows the stream, and resumes after the service restarts: the
		// events written meanwhile come once each, none repeated.
		tail := exec.Command(bin, "events", "tail", "-o", "ndjson", "--type", "trap.created")
		tail.Env = append(withoutFlytrapVars(os.Environ()), "FLYTRAP_URL="+base, "FLYTRAP_API_KEY="+key, "XDG_CONFIG_HOME="+e.config)
		pipe, err := tail.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var tailErr syncBuffer
		tail.Stderr = &tailErr
		if err := tail.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tail.Process.Kill(); _ = tail.Wait() })
		lines := make(chan string, 16)
		go func() {
			sc := bufio.NewScanner(pipe)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		next := func(what string) map[string]any {
			t.Helper()
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("%s: events tail ended\nstderr: %s", what, &tailErr)
				}
				var ev map[string]any
				if err := json.Unmarshal([]byte(l), &ev); err != nil {
					t.Fatalf("%s: %q: %v", what, l, err)
				}
				return ev
			case <-time.After(60 * time.Second):
				t.Fatalf("%s: no event from events tail\nstderr: %s", what, &tailErr)
			}
			return nil
		}
		// The stream starts at the head: keep creating until the tail shows one (it may
		// connect after the first), then the rest must follow in order.
		seen := map[string]int{}
		for i := 0; ; i++ {
			e.must("traps", "create", "--name", "tail", "--type", "page", "--path", "/tail/"+string(rune('a'+i)))
			select {
			case l := <-lines:
				var ev map[string]any
				_ = json.Unmarshal([]byte(l), &ev)
				seen[ev["id"].(string)]++
			case <-time.After(2 * time.Second):
				if i < 20 {
					continue
				}
				t.Fatalf("events tail showed nothing\nstderr: %s", &tailErr)
			}
			break
		}
		stop()
		_, _, stop = startBinary(t, bin, dir, serveArgs...)
		defer stop()
		e.must("traps", "create", "--name", "after", "--type", "page", "--path", "/after-restart")
		e.must("traps", "create", "--name", "after 2", "--type", "page", "--path", "/after-restart-2")
		for _, p := range []string{"/after-restart", "/after-restart-2"} {
			ev := next("after the restart")
			seen[ev["id"].(string)]++
			if d, _ := ev["data"].(map[string]any); d["path"] != p {
				t.Errorf("after the restart: event %v, want the creation of %s", ev, p)
			}
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("event %s shown %d times", id, n)
			}
		}
		if !strings.Contains(tailErr.String(), "reconnecting") {
			t.Errorf("tail said nothing of the drop on stderr: %s", &tailErr)
		}

		// keys over the API: create (shown once), use, list, revoke; a revoked key exits 3.
		var created map[string]any
		if err := json.Unmarshal([]byte(e.must("keys", "create", "--name", "ci", "--scope", "read-only", "-o", "json")), &created); err != nil {
			t.Fatal(err)
		}
		ro := &clientEnv{t: t, bin: bin, url: base, key: created["key"].(string), config: e.config}
		ro.must("traps", "list")
		ro.want(exitAuth, []string{"traps", "create", "--name", "x", "--type", "page"}, "403")
		ro.want(exitAuth, []string{"keys", "create", "--name", "x", "--scope", "admin"})
		if out := e.must("keys", "list"); !strings.Contains(out, created["id"].(string)) || !strings.Contains(out, "read-only") {
			t.Errorf("keys list:\n%s", out)
		}
		e.must("keys", "revoke", created["id"].(string))
		ro.want(exitAuth, []string{"traps", "list"}, "401")

		// A deploy key of one site, expiring: it manages that site's traps and reads nothing else.
		siteID := e.traps()[0]["site_id"].(string)
		var deploy map[string]any
		if err := json.Unmarshal([]byte(e.must("keys", "create", "--name", "deploy", "--scope", "read-write", "--site", siteID, "--expires", "30d", "-o", "json")), &deploy); err != nil {
			t.Fatal(err)
		}
		if deploy["siteID"] != siteID || deploy["expiresAt"] == nil {
			t.Errorf("deploy key: %v", deploy)
		}
		dk := &clientEnv{t: t, bin: bin, url: base, key: deploy["key"].(string), config: e.config}
		dk.must("traps", "list", "--site", siteID)
		dk.want(exitAuth, []string{"sessions", "list"}, "403")
		if out := e.must("keys", "list"); !strings.Contains(out, siteID) {
			t.Errorf("keys list does not show the deploy key's site:\n%s", out)
		}
		e.want(exitInvalid, []string{"keys", "create", "--name", "old", "--scope", "read-only", "--expires", "2000-01-01T00:00:00Z"})
		e.want(exitUsage, []string{"keys", "create", "--name", "old", "--scope", "read-only", "--expires", "soon"}, "duration")
		(&clientEnv{t: t, bin: bin, url: base, key: "ftk_wrong", config: e.config}).want(exitAuth, []string{"sessions", "list"}, "401")
		(&clientEnv{t: t, bin: bin, config: e.config}).want(exitUsage, []string{"traps", "list"}, "FLYTRAP_URL")
		(&clientEnv{t: t, bin: bin, url: "http://" + freeAddr(t), key: key, config: e.config}).want(exitFailure, []string{"traps", "list"}, "API:")

		// A profile file stands in for the variables.
		if err := os.MkdirAll(filepath.Join(e.config, "flytrap"), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(e.config, "flytrap"), "config", "profiles:\n  default:\n    url: "+base+"\n    api_key: "+key+"\n  other:\n    url: http://127.0.0.1:1\n    api_key: ftk_x\n")
		if n := strings.Count((&clientEnv{t: t, bin: bin, config: e.config}).must("traps", "list", "-o", "ndjson"), "\n"); n < 3 {
			t.Errorf("traps list with the profile: %d traps", n)
		}
		(&clientEnv{t: t, bin: bin, config: e.config}).want(exitFailure, []string{"traps", "list", "--profile", "other"})
		(&clientEnv{t: t, bin: bin, config: e.config}).want(exitUsage, []string{"traps", "list", "--profile", "nope"}, `no profile "nope"`)

		// The database commands moved under admin; the old spellings work with a hint.
		r := e.run("orgs", "list", "--db", dsn)
		if r.code != 0 || !strings.Contains(r.stderr, `use "flytrap admin orgs list"`) || !regexp.MustCompile(`org_[0-9a-z]{26}`).MatchString(r.stdout) {
			t.Errorf("orgs list (deprecated): %+v", r)
		}
		if out := e.must("admin", "orgs", "list", "--db", dsn); !strings.Contains(out, "org_") {
			t.Errorf("admin orgs list: %s", out)
		}
	})
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestVersionStamped builds flytrap as the README's release build does (-ldflags -X
// main.version and main.commit; without -trimpath, which would defeat the build cache) and
// checks that flytrap version prints them and the Go version; then with -buildvcs=true in
// a checkout, that the commit is the build's own vcs.revision.
func TestVersionStamped(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping a build of the binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "flytrap")
	build := func(vcs string) []string {
		t.Helper()
		if out, err := exec.Command(goTool, "build", "-buildvcs="+vcs, "-ldflags", "-X main.version=v9.8.7-test -X main.commit=0123abc",
			"-o", bin, ".").CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		out, err := exec.Command(bin, "version").Output()
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 3 || lines[0] != "flytrap v9.8.7-test" || !strings.HasPrefix(lines[2], "go      go1.") {
			t.Fatalf("version printed:\n%s", out)
		}
		return lines
	}
	if lines := build("false"); lines[1] != "commit  0123abc" {
		t.Errorf("without vcs settings: %q, want the stamped commit", lines[1])
	}
	lines := build("true")
	info, err := exec.Command(goTool, "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`vcs\.revision=([0-9a-f]+)`).FindSubmatch(info); m != nil {
		if !strings.HasPrefix(lines[1], "commit  "+string(m[1])) {
			t.Errorf("version printed %q, want the build's revision %s", lines[1], m[1])
		}
	} else {
		t.Logf("the build has no vcs settings here (not a plain git checkout): only the stamped commit was checked")
	}
}

// TestClientWaitsOutRateLimit: against a service with a small per-key rate limit, apply
// of more traps than the burst goes through, waiting as each 429's Retry-After says, and
// says so on stderr; the file is applied whole, once.
func TestClientWaitsOutRateLimit(t *testing.T) {
	bin := flytrapBinary(t)
	dir := t.TempDir()
	apiAddr, trapAddr := freeAddr(t), freeAddr(t)
	base, key, stop := startBinary(t, bin, dir, "--db", ft.SQLiteDSN(t), "--api-addr", apiAddr, "--trap-addr", trapAddr,
		"--rate-limit", "4", "--rate-burst", "3")
	defer stop()
	e := &clientEnv{t: t, bin: bin, url: base, key: key, config: t.TempDir()}
	var b strings.Builder
	b.WriteString("sites:\n  - site: default\n    traps:\n")
	for i := range 12 {
		b.WriteString("      - {path: /rl/" + strconv.Itoa(i) + ", name: trap " + strconv.Itoa(i) + ", type: page}\n")
	}
	file := writeFile(t, dir, "many.yaml", b.String())
	r := e.run("apply", "-f", file)
	if r.code != 0 || !strings.Contains(r.stdout, "Applied: 12 to create") || !strings.Contains(r.stderr, "rate limited: waiting") {
		t.Fatalf("apply under a rate limit: %+v", r)
	}
	if n := len(e.traps()); n != 12 {
		t.Errorf("%d traps, want 12", n)
	}
}
