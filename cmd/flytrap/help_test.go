package main

import (
	"errors"
	"flag"
	"os"
	"strings"
	"testing"
)

// TestHelpListsEveryCommand: flytrap help lists every row of the command table, each
// command answers -h (exit status 0) and "flytrap help CMD" with its own help, and the
// README's "Command line" synopsis is the help's list.
func TestHelpListsEveryCommand(t *testing.T) {
	all := cli(t, noEnv, "help")
	if all.err != nil {
		t.Fatalf("help: %v", all.err)
	}
	for _, c := range commands {
		first := strings.Split(c.synopsis, "\n")[0]
		if !strings.Contains(all.stdout, "\n  flytrap "+first) || !strings.Contains(all.stdout, c.summary[0]) {
			t.Errorf("help does not list %q:\n%s", c.name, all.stdout)
		}
		want := "Usage: flytrap " + first
		if c.own != nil && !c.client && c.name != "version" {
			want = "Usage of flytrap " + c.name // serve's own flag set
		}
		// The database commands take --db; the API client's take --url and --api-key.
		flagWant := "-db"
		if c.client && c.name != "validate" {
			flagWant = "-api-key"
		}
		if c.client || c.name == "version" {
			flagWant = strings.TrimPrefix(flagWant, "-db") // validate, version: no --db
		}
		args := append(strings.Fields(c.name), "-h")
		r := cli(t, noEnv, args...)
		if !errors.Is(r.err, flag.ErrHelp) || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, flagWant) ||
			((c.client || c.name == "version") && strings.Contains(r.stderr, "-db")) {
			t.Errorf("flytrap %s: err %v, stderr %q, want flag.ErrHelp and a help naming it and %s", strings.Join(args, " "), r.err, r.stderr, flagWant)
		}
		r = cli(t, noEnv, append([]string{"help"}, strings.Fields(c.name)...)...)
		if r.err != nil || !strings.Contains(r.stdout, want) {
			t.Errorf("flytrap help %s: err %v, stdout %q", c.name, r.err, r.stdout)
		}
	}
	for _, g := range []string{"admin orgs", "admin sites", "admin keys", "keys", "traps", "sessions", "events"} {
		r := cli(t, noEnv, append([]string{"help"}, strings.Fields(g)...)...)
		if r.err != nil || !strings.Contains(r.stdout, "flytrap "+g+" list") || strings.Contains(r.stdout, "flytrap admin stats") {
			t.Errorf("flytrap help %s: err %v, stdout %q", g, r.err, r.stdout)
		}
	}

	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(readme), "## Command line\n\n```text\n")
	block, _, _ = strings.Cut(block, "```")
	list, _, _ := strings.Cut(strings.TrimPrefix(usage(), "Usage:\n"), "\n\nThe commands above")
	list = strings.ReplaceAll("\n"+list, "\n  ", "\n")[1:] + "\n"
	if block != list {
		t.Errorf("README's Command line block differs from flytrap help; make it:\n%s", list)
	}
}
