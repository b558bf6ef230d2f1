package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/retention"
	"github.com/flytrap/flytrap/server"
	"github.com/flytrap/flytrap/store"
)

// command is one subcommand of flytrap: a row of commands. The dispatcher (run) finds it
// by its words, parses its flags (and FLYTRAP_DB), checks its id argument and its flags,
// opens the database when it needs one, and runs it; help and -h are built from the row.
type command struct {
	name     string   // the words after "flytrap": "stats", "keys create"
	synopsis string   // what help shows after "flytrap"; more lines continue it
	summary  []string // what it does, one line of help each
	id       *idArg   // the one positional argument, when it takes one
	db       bool     // opens --db: after the flags check out, so a typo leaves no database behind
	// flags declares the command's flags on fs and returns how it runs; the variables
	// it declared are shared by the action's check and run.
	flags func(fs *flag.FlagSet) action
	// own is a command that parses its arguments itself (serve: its flags are the
	// service's settings); flags, id and db are unused then.
	own func(ctx context.Context, args []string, stdout, stderr io.Writer, env server.Env) error
	// client is a command of the API client (client.go): help lists it apart from the
	// database commands.
	client bool
}

// action is how a command runs once its flags are parsed.
type action struct {
	check func() error                             // before the database is opened; may be nil
	run   func(ctx context.Context, c *call) error // the work
}

// idArg is a command's positional id, accepted before or after the flags.
type idArg struct {
	name   string // SITE_ID
	prefix string // ids.Site
	what   string // "a site id"
}

// call is what a running command is given.
type call struct {
	id             string    // the idArg's value
	db             *store.DB // open when the command has db set
	stdout, stderr io.Writer
}

var (
	siteID = &idArg{"SITE_ID", ids.Site, "a site id"}
	keyID  = &idArg{"KEY_ID", ids.APIKey, "an API key id"}
)

// commands is every subcommand, in the order help lists them.
var commands = []*command{
	{name: "serve", synopsis: "[serve] [flags]", summary: []string{"run the service"}, own: serve},
	{name: "admin orgs create", synopsis: "admin orgs create --name NAME", summary: []string{"create an organization; prints its id"}, db: true, flags: orgsCreate},
	{name: "admin orgs list", synopsis: "admin orgs list", summary: []string{"list organizations with their webhook network"}, db: true, flags: orgsList},
	{name: "admin orgs set-webhook-network",
		synopsis: "admin orgs set-webhook-network --org ORG_ID [--allow-cidrs CIDR,…] [--allow-private=true|false]\n[--show-private-responses=true|false]",
		summary:  []string{"let one organization's webhooks reach private networks"}, db: true, flags: orgsSetWebhookNetwork},
	{name: "admin sites list", synopsis: "admin sites list [--org ORG_ID]", summary: []string{"list sites with their host and whether it is verified"}, db: true, flags: sitesList},
	{name: "admin sites verify", synopsis: "admin sites verify SITE_ID", summary: []string{"route the site's host to it (after checking who owns it)"}, id: siteID, db: true, flags: sitesVerify(true)},
	{name: "admin sites unverify", synopsis: "admin sites unverify SITE_ID", summary: []string{"stop routing the site's host to it"}, id: siteID, db: true, flags: sitesVerify(false)},
	{name: "admin sites lures", synopsis: "admin sites lures SITE_ID [--off] [--paths /docs/,…] [--rate 0.5] [--count 1-3] [--reset]",
		summary: []string{"which of the site's pages the lure proxy (serve --upstream)", "puts lures into, and how many"}, id: siteID, db: true, flags: siteLures},
	{name: "admin keys create", synopsis: "admin keys create --org ORG_ID --name NAME --scope read-only|read-write|admin",
		summary: []string{"create an API key; prints the key once"}, db: true, flags: keysCreate},
	{name: "admin keys list", synopsis: "admin keys list --org ORG_ID", summary: []string{"list an organization's keys"}, db: true, flags: keysList},
	{name: "admin keys revoke", synopsis: "admin keys revoke KEY_ID", summary: []string{"revoke a key at once"}, id: keyID, db: true, flags: keysRevoke},
	{name: "admin stats", synopsis: "admin stats [--estimate] [--json] [--crawler-ranges-refresh D]", summary: []string{"database size, free disk, rows and oldest row per table,", "and each crawler range list's date (STALE when older than 3 refreshes)"}, db: true, flags: stats},
	{name: "admin vacuum", synopsis: "admin vacuum", summary: []string{"compact a SQLite file (once for files made before", "incremental auto-vacuum; stop the service first)"}, db: true, flags: vacuum},
	{name: "admin backup", synopsis: "admin backup --to FILE", summary: []string{"copy a SQLite database while the service runs"}, db: true, flags: backup},
	{name: "admin partition-hits", synopsis: "admin partition-hits [--retain-hits 30d]", summary: []string{"PostgreSQL: turn a plain hits table into one partitioned", "by day (stop the service first)"}, db: true, flags: partitionTable("hits", retention.DefaultConfig().Hits)},
	{name: "admin partition-events", synopsis: "admin partition-events [--retain-events 30d]", summary: []string{"the same for the events table"}, db: true, flags: partitionTable("events", retention.DefaultConfig().Events)},
}

// summaryColumn is where help's summaries start.
const summaryColumn = 47

// usage is flytrap help: every command, from the table.
func usage() string {
	var b strings.Builder
	b.WriteString("Usage:\n")
	for _, c := range commands {
		if !c.client {
			c.writeLine(&b)
		}
	}
	b.WriteString("\nAPI client commands (FLYTRAP_URL and FLYTRAP_API_KEY, or a profile: flytrap help api):\n")
	for _, c := range commands {
		if c.client {
			c.writeLine(&b)
		}
	}
	b.WriteString("\nThe commands above the API client's open the database: they take --db (FLYTRAP_DB).\n\"flytrap help COMMAND\" or \"flytrap COMMAND -h\" describes one;\n" +
		"\"flytrap serve -h\" lists the service's flags.\n")
	return b.String()
}

// writeLine writes c's lines of the usage: the synopsis, then the summary from
// summaryColumn, on the synopsis's last line when there is room.
func (c *command) writeLine(b *strings.Builder) {
	lines := strings.Split(c.synopsis, "\n")
	indent := strings.Repeat(" ", len("  flytrap ")+len(c.name)+1)
	last := ""
	for i, l := range lines {
		if i == 0 {
			l = "  flytrap " + l
		} else {
			l = indent + l
		}
		if i < len(lines)-1 {
			b.WriteString(l + "\n")
		}
		last = l
	}
	pad := strings.Repeat(" ", summaryColumn)
	for i, s := range c.summary {
		if i == 0 && utf8.RuneCountInString(last) < summaryColumn-2 {
			b.WriteString(last + strings.Repeat(" ", summaryColumn-utf8.RuneCountInString(last)) + s + "\n")
			continue
		}
		if i == 0 {
			b.WriteString(last + "\n")
		}
		b.WriteString(pad + s + "\n")
	}
}

// group is the commands whose name starts with word and a space ("keys" → keys create, …).
func group(word string) []*command {
	var out []*command
	for _, c := range commands {
		if strings.HasPrefix(c.name, word+" ") {
			out = append(out, c)
		}
	}
	return out
}

// lookup is the command whose name is the longest run of args' first words, and how
// many words its name has.
func lookup(args []string) (*command, int) {
	for n := min(len(args), 3); n > 0; n-- {
		name := strings.Join(args[:n], " ")
		for _, c := range commands {
			if c.name == name {
				return c, n
			}
		}
	}
	return nil, 0
}

// legacyDB says whether args of a keys command are the database command's, from before
// it moved under admin: they name --org or --db.
func legacyDB(args []string) bool {
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && (name == "org" || name == "db") {
			return true
		}
	}
	return false
}

// find is the command args name, and the arguments after its name. A database command
// spelled as before it moved under admin ("flytrap orgs list") is found, with a hint on
// stderr; so is "flytrap keys create --org …", whose --org or --db says it is the
// database's keys command and not the API client's.
func find(args []string, stderr io.Writer) (*command, []string, error) {
	c, n := lookup(args)
	if c != nil && !(c.client && legacyDB(args[n:])) {
		return c, args[n:], nil
	}
	if args[0] != "admin" {
		if old, m := lookup(append([]string{"admin"}, args...)); old != nil && m > 1 {
			fmt.Fprintf(stderr, "flytrap: %q is deprecated: the database commands moved under admin, use \"flytrap %s\"\n",
				"flytrap "+strings.Join(args[:m-1], " "), old.name)
			return old, args[m-1:], nil
		}
	}
	// A group: "keys", "admin", "admin orgs".
	prefix := args[0]
	if len(args) > 1 && !strings.HasPrefix(args[1], "-") && len(group(prefix+" "+args[1])) > 0 {
		prefix, args = prefix+" "+args[1], append([]string{prefix + " " + args[1]}, args[2:]...)
	}
	g := group(prefix)
	if len(g) == 0 {
		fmt.Fprint(stderr, usage())
		return nil, nil, fmt.Errorf("unknown command %q", args[0])
	}
	var subs []string
	for _, c := range g {
		sub, _, _ := strings.Cut(strings.TrimPrefix(c.name, prefix+" "), " ")
		if !slices.Contains(subs, sub) {
			subs = append(subs, sub)
		}
	}
	if len(args) == 1 {
		return nil, nil, fmt.Errorf("usage: flytrap %s %s …", prefix, strings.Join(subs, "|"))
	}
	if isHelp(args[1]) { // flytrap keys -h: the group's lines of the usage
		fmt.Fprint(stderr, groupUsage(g))
		return nil, nil, flag.ErrHelp
	}
	want := strings.Join(subs[:len(subs)-1], ", ") + " or " + subs[len(subs)-1]
	if len(subs) == 1 {
		want = subs[0]
	}
	return nil, nil, fmt.Errorf("unknown %s command %q (want %s)", prefix, args[1], want)
}

func groupUsage(g []*command) string {
	var b strings.Builder
	b.WriteString("Usage:\n")
	for _, c := range g {
		c.writeLine(&b)
	}
	return b.String()
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// help is flytrap help [COMMAND]: the usage, a group's lines, or one command's help, on stdout.
func help(ctx context.Context, args []string, stdout io.Writer, env server.Env) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage())
		return nil
	}
	if len(args) == 1 && args[0] == "api" {
		fmt.Fprint(stdout, apiHelp)
		return nil
	}
	c, _, err := find(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		if g := group(strings.Join(args, " ")); len(g) > 0 && len(args) <= 2 {
			fmt.Fprint(stdout, groupUsage(g))
			return nil
		}
		return err
	}
	if err := c.exec(ctx, []string{"-h"}, stdout, stdout, env); !errors.Is(err, flag.ErrHelp) {
		return err
	}
	return nil
}

// exec parses args and runs c.
func (c *command) exec(ctx context.Context, args []string, stdout, stderr io.Writer, env server.Env) error {
	if c.own != nil {
		return c.own(ctx, args, stdout, stderr, env)
	}
	fs := newFlagSet("flytrap "+c.name, stderr)
	fs.Usage = func() { c.writeHelp(fs) }
	act := c.flags(fs)
	in := &call{stdout: stdout, stderr: stderr}
	var err error
	if c.id != nil {
		in.id, err = parseIDArgs(fs, args, env, "usage: flytrap "+strings.Split(c.synopsis, "\n")[0])
	} else {
		err = parseArgs(fs, args, env, 0)
	}
	if err != nil {
		return err
	}
	if c.id != nil && ids.Prefix(in.id) != c.id.prefix {
		return fmt.Errorf("%s: %q is not %s (%s_…)", c.id.name, in.id, c.id.what, c.id.prefix)
	}
	if act.check != nil {
		if err := act.check(); err != nil {
			return err
		}
	}
	if c.db {
		if in.db, err = store.Open(ctx, fs.Lookup("db").Value.String()); err != nil {
			return err
		}
		defer in.db.Close()
	}
	return act.run(ctx, in)
}

// writeHelp is flytrap CMD -h: its synopsis, what it does, and its flags.
func (c *command) writeHelp(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprintf(w, "Usage: flytrap %s\n\n", strings.ReplaceAll(c.synopsis, "\n", "\n         "))
	fmt.Fprintf(w, "%s.\n\nFlags:\n", strings.ToUpper(c.summary[0][:1])+strings.Join(append([]string{c.summary[0][1:]}, c.summary[1:]...), " "))
	fs.PrintDefaults()
}

// parseArgs reads a command's flags (and FLYTRAP_DB); words left over are an error, so
// "--name Big Corp" is not taken as "Big".
func parseArgs(fs *flag.FlagSet, args []string, env server.Env, positional int) error {
	if err := server.ParseFlags(fs, args, env); err != nil {
		return err
	}
	if fs.NArg() > positional {
		return fmt.Errorf("unexpected arguments %q (quote values with spaces)", fs.Args()[positional:])
	}
	return nil
}

// parseIDArgs parses the flags of a command that takes one id, accepted before or after them.
func parseIDArgs(fs *flag.FlagSet, args []string, env server.Env, usage string) (string, error) {
	var id string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	positional := 0
	if id == "" {
		positional = 1
	}
	if err := parseArgs(fs, args, env, positional); err != nil {
		return "", err
	}
	if id == "" && fs.NArg() == 1 {
		id = fs.Arg(0)
	}
	if id == "" {
		return "", errors.New(usage)
	}
	return id, nil
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := server.DefaultConfig().DB
	server.RegisterDB(fs, &dsn)
	return fs
}
