// Command flytrap runs the Flytrap honeypot and AI-agent detection service,
// and manages its organizations and API keys.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"entgo.io/ent/dialect"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/internal/gcfloor"
	"github.com/flytrap/flytrap/retention"
	"github.com/flytrap/flytrap/server"
	"github.com/flytrap/flytrap/store"
	"github.com/flytrap/flytrap/viewer"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, server.OSEnv)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	default:
		fmt.Fprintln(os.Stderr, "flytrap:", err)
		os.Exit(2)
	}
}

const usage = `Usage:
  flytrap [serve] [flags]                      run the service
  flytrap orgs create --name NAME              create an organization; prints its id
  flytrap orgs list                            list organizations with their webhook network
  flytrap orgs set-webhook-network --org ORG_ID [--allow-cidrs CIDR,…] [--allow-private=true|false]
                                   [--show-private-responses=true|false]
                                               let one organization's webhooks reach private networks
  flytrap sites list [--org ORG_ID]            list sites with their host and whether it is verified
  flytrap sites verify SITE_ID                 route the site's host to it (after checking who owns it)
  flytrap sites unverify SITE_ID               stop routing the site's host to it
  flytrap sites lures SITE_ID [--off] [--paths /docs/,…] [--rate 0.5] [--count 1-3] [--reset]
                                               which of the site's pages the lure proxy (serve --upstream)
                                               puts lures into, and how many
  flytrap keys create --org ORG_ID --name NAME --scope read-only|read-write|admin
                                               create an API key; prints the key once
  flytrap keys list --org ORG_ID               list an organization's keys
  flytrap keys revoke KEY_ID                   revoke a key at once
  flytrap stats [--estimate] [--json]          database size, free disk, rows and oldest row per table
  flytrap vacuum                               compact a SQLite file (once for files made before
                                               incremental auto-vacuum; stop the service first)
  flytrap backup --to FILE                     copy a SQLite database while the service runs
  flytrap partition-hits [--retain-hits 30d]   PostgreSQL: turn a plain hits table into one partitioned
                                               by day (stop the service first)
  flytrap partition-events [--retain-events 30d]
                                               the same for the events table

Every command takes --db (FLYTRAP_DB). "flytrap serve -h" lists the service's flags.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer, env server.Env) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(stdout, usage)
		return nil
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return serve(ctx, args, stdout, stderr, env)
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return serve(ctx, rest, stdout, stderr, env)
	case "orgs":
		return orgs(ctx, rest, stdout, stderr, env)
	case "keys":
		return keys(ctx, rest, stdout, stderr, env)
	case "sites":
		return sites(ctx, rest, stdout, stderr, env)
	case "stats":
		return stats(ctx, rest, stdout, stderr, env)
	case "vacuum":
		return vacuum(ctx, rest, stdout, stderr, env)
	case "backup":
		return backup(ctx, rest, stdout, stderr, env)
	case "partition-hits":
		return partitionTable(ctx, "hits", retention.DefaultConfig().Hits, rest, stdout, stderr, env)
	case "partition-events":
		return partitionTable(ctx, "events", retention.DefaultConfig().Events, rest, stdout, stderr, env)
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer, env server.Env) error {
	cfg := server.DefaultConfig()
	fs := flag.NewFlagSet("flytrap serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.Register(fs)
	if err := server.ParseFlags(fs, args, env); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve takes no arguments, got %q", fs.Args())
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := newLogger(stderr, cfg.LogFormat, cfg.LogLevel)
	if stopGC, ok := gcfloor.Start(uint64(cfg.GCHeapFloorBytes)); ok {
		defer stopGC()
	} else if cfg.GCHeapFloorBytes > 0 {
		log.Info("GOGC is set: the garbage collector follows it, not --gc-heap-floor-bytes", "GOGC", os.Getenv("GOGC"))
	}
	// The ports come first: a start that cannot listen must not bootstrap an empty
	// database, or the admin key it made would never be shown (and later starts make none).
	ln, err := server.Listen(cfg)
	if err != nil {
		return err
	}
	served := false
	defer func() {
		if !served {
			ln.Close()
		}
	}()
	db, err := store.OpenWith(ctx, cfg.DB, cfg.StoreOptions())
	if err != nil {
		return err
	}
	defer db.Close()
	srv, err := server.New(ctx, cfg, db, log)
	if err != nil {
		return err
	}
	// Everything that can fail before serving has succeeded: only now is the first
	// organization made, and its key printed at once.
	boot, err := bootstrap(ctx, db.Client)
	if err != nil {
		return err
	}
	if boot != nil {
		printBootstrap(stdout, boot, ln.API.Addr(), ln.Trap.Addr())
		log.Info("created the first organization", "org_id", boot.OrgID, "site_id", boot.SiteID, "key_id", boot.KeyID)
	}
	served = true
	return srv.Serve(ctx, ln, nil)
}

func printBootstrap(w io.Writer, b *bootstrapped, api, traps net.Addr) {
	addr := browsable(api)
	fmt.Fprintf(w, `
================================================================================
 Flytrap created organization %s with an admin API key.
 It is shown this once and cannot be retrieved again; store it somewhere safe:

   %s

 Dashboard:  http://%s/   (sign in with the key)

 Try it:  curl -s -H 'Authorization: Bearer %s' \
            -H 'Content-Type: application/json' \
            -d '{"query":"{ organization { id name } }"}' http://%s/graphql

 Traps you create answer on http://%s
 Lost the key? "flytrap orgs list", then "flytrap keys create --org ORG_ID
 --name NAME --scope admin" on the same --db.
================================================================================

`, b.OrgID, b.Key, addr, b.Key, addr, browsable(traps))
}

// browsable is addr as a browser on this machine reaches it: a listener on every
// interface (0.0.0.0, [::]) is named by the loopback address.
func browsable(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

func newLogger(w io.Writer, format, level string) *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		lvl = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "text" || (format == "auto" && isTerminal(w)) {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// parseArgs reads a management command's flags (and FLYTRAP_DB); words left over are
// an error, so "--name Big Corp" is not taken as "Big".
func parseArgs(fs *flag.FlagSet, args []string, env server.Env, positional int) error {
	if err := server.ParseFlags(fs, args, env); err != nil {
		return err
	}
	if fs.NArg() > positional {
		return fmt.Errorf("unexpected arguments %q (quote values with spaces)", fs.Args()[positional:])
	}
	return nil
}

// openDB opens the database --db names; call it once the other flags are checked,
// so a typo does not leave a new database behind.
func openDB(ctx context.Context, fs *flag.FlagSet) (*store.DB, error) {
	return store.Open(ctx, fs.Lookup("db").Value.String())
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

func orgs(ctx context.Context, args []string, stdout, stderr io.Writer, env server.Env) error {
	if len(args) == 0 {
		return errors.New("usage: flytrap orgs create|list|set-webhook-network …")
	}
	switch sub, rest := args[0], args[1:]; sub {
	case "create":
		fs := newFlagSet("flytrap orgs create", stderr)
		name := fs.String("name", "", "organization name")
		if err := parseArgs(fs, rest, env, 0); err != nil {
			return err
		}
		if strings.TrimSpace(*name) == "" {
			return errors.New("--name: must not be empty")
		}
		db, err := openDB(ctx, fs)
		if err != nil {
			return err
		}
		defer db.Close()
		org, err := createOrg(ctx, db.Client, *name)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, org.ID)
		return nil
	case "list":
		fs := newFlagSet("flytrap orgs list", stderr)
		if err := parseArgs(fs, rest, env, 0); err != nil {
			return err
		}
		db, err := openDB(ctx, fs)
		if err != nil {
			return err
		}
		defer db.Close()
		list, err := listOrgs(ctx, db.Client)
		if err != nil {
			return err
		}
		printOrgs(stdout, list)
		return nil
	case "set-webhook-network":
		fs := newFlagSet("flytrap orgs set-webhook-network", stderr)
		org := fs.String("org", "", "organization id")
		cidrs := fs.String("allow-cidrs", "", "comma-separated private networks this organization's webhooks may reach; empty clears the list")
		private := fs.Bool("allow-private", false, "let this organization's webhooks reach every private, loopback and link-local address")
		show := fs.Bool("show-private-responses", false, "store and show receivers' answers from addresses that needed an allow-list")
		if err := parseArgs(fs, rest, env, 0); err != nil {
			return err
		}
		if ids.Prefix(*org) != ids.Org {
			return fmt.Errorf("--org: %q is not an organization id (org_…)", *org)
		}
		// Only the flags given change; the others keep their stored value.
		var change webhookNetwork
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "allow-private":
				change.AllowPrivate = private
			case "show-private-responses":
				change.ShowPrivateResponses = show
			}
		})
		if set(fs, "allow-cidrs") {
			list, err := parseCIDRs(*cidrs)
			if err != nil {
				return err
			}
			change.AllowCIDRs = &list
		}
		if change == (webhookNetwork{}) {
			return errors.New("give at least one of --allow-cidrs, --allow-private, --show-private-responses")
		}
		db, err := openDB(ctx, fs)
		if err != nil {
			return err
		}
		defer db.Close()
		o, err := setWebhookNetwork(ctx, db.Client, *org, change)
		if err != nil {
			return err
		}
		printOrgs(stdout, []*ent.Organization{o})
		return nil
	default:
		return fmt.Errorf("unknown orgs command %q (want create, list or set-webhook-network)", sub)
	}
}

// set reports whether the flag name was given (on the command line or in the environment).
func set(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

func printOrgs(w io.Writer, list []*ent.Organization) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tCREATED\tWEBHOOK ALLOW-PRIVATE\tWEBHOOK ALLOW-CIDRS\tSHOW PRIVATE RESPONSES")
	for _, o := range list {
		cidrs := strings.Join(o.WebhookAllowCidrs, ",")
		if cidrs == "" {
			cidrs = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\t%t\n", o.ID, oneLine(o.Name), o.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"),
			o.WebhookAllowPrivate, cidrs, o.WebhookShowPrivateResponses)
	}
	tw.Flush()
}

// oneLine keeps a tenant-chosen name from breaking the table (or the terminal).
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

func sites(ctx context.Context, args []string, stdout, stderr io.Writer, env server.Env) error {
	if len(args) == 0 {
		return errors.New("usage: flytrap sites list|verify|unverify|lures …")
	}
	switch sub, rest := args[0], args[1:]; sub {
	case "list":
		fs := newFlagSet("flytrap sites list", stderr)
		org := fs.String("org", "", "only this organization's sites")
		if err := parseArgs(fs, rest, env, 0); err != nil {
			return err
		}
		if *org != "" && ids.Prefix(*org) != ids.Org {
			return fmt.Errorf("--org: %q is not an organization id (org_…)", *org)
		}
		db, err := openDB(ctx, fs)
		if err != nil {
			return err
		}
		defer db.Close()
		list, err := listSites(ctx, db.Client, *org)
		if err != nil {
			return err
		}
		printSites(stdout, list)
		return nil
	case "verify", "unverify":
		fs := newFlagSet("flytrap sites "+sub, stderr)
		id, err := parseIDArgs(fs, rest, env, "usage: flytrap sites "+sub+" SITE_ID")
		if err != nil {
			return err
		}
		if ids.Prefix(id) != ids.Site {
			return fmt.Errorf("SITE_ID: %q is not a site id (site_…)", id)
		}
		db, err := openDB(ctx, fs)
		if err != nil {
			return err
		}
		defer db.Close()
		s, err := verifySite(ctx, db.Client, id, sub == "verify")
		if err != nil {
			return err
		}
		printSites(stdout, []*ent.Site{s})
		return nil
	case "lures":
		return siteLures(ctx, rest, stdout, stderr, env)
	default:
		return fmt.Errorf("unknown sites command %q (want list, verify, unverify or lures)", sub)
	}
}

func printSites(w io.Writer, list []*ent.Site) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tORG\tNAME\tHOST\tVERIFIED\tLURES")
	for _, s := range list {
		host := "-"
		if s.Host != nil {
			host = *s.Host
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%t\t%s\n", s.ID, s.OrgID, oneLine(s.Name), host, s.HostVerified, lureSummary(s.Lures))
	}
	tw.Flush()
}

func keys(ctx context.Context, args []string, stdout, stderr io.Writer, env server.Env) error {
	if len(args) == 0 {
		return errors.New("usage: flytrap keys create|list|revoke …")
	}
	switch sub, rest := args[0], args[1:]; sub {
	case "create":
		fs := newFlagSet("flytrap keys create", stderr)
		org := fs.String("org", "", "organization id")
		name := fs.String("name", "", "a name saying what the key is for")
		scope := fs.String("scope", "", "read-only, read-write or admin")
		if err := parseArgs(fs, rest, env, 0); err != nil {
			return err
		}
		sc, err := viewer.ParseScope(*scope)
		if err != nil {
			return fmt.Errorf("--scope: %w", err)
		}
		if ids.Prefix(*org) != ids.Org {
			return fmt.Errorf("--org: %q is not an organization id (org_…)", *org)
		}
		if strings.TrimSpace(*name) == "" {
			return errors.New("--name: must not be empty")
		}
		db, err := openDB(ctx, fs)
		if err != nil {
			return err
		}
		defer db.Close()
		key, _, err := createKey(ctx, db.Client, *org, *name, sc)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, key)
		return nil
	case "list":
		fs := newFlagSet("flytrap keys list", stderr)
		org := fs.String("org", "", "organization id")
		if err := parseArgs(fs, rest, env, 0); err != nil {
			return err
		}
		if ids.Prefix(*org) != ids.Org {
			return fmt.Errorf("--org: %q is not an organization id (org_…)", *org)
		}
		db, err := openDB(ctx, fs)
		if err != nil {
			return err
		}
		defer db.Close()
		list, err := listKeys(ctx, db.Client, *org)
		if err != nil {
			return err
		}
		printKeys(stdout, list)
		return nil
	case "revoke":
		fs := newFlagSet("flytrap keys revoke", stderr)
		id, err := parseIDArgs(fs, rest, env, "usage: flytrap keys revoke KEY_ID")
		if err != nil {
			return err
		}
		if ids.Prefix(id) != ids.APIKey {
			return fmt.Errorf("KEY_ID: %q is not an API key id (key_…)", id)
		}
		db, err := openDB(ctx, fs)
		if err != nil {
			return err
		}
		defer db.Close()
		if err := revokeKey(ctx, db.Client, id); err != nil {
			return err
		}
		if db.Dialect == dialect.Postgres { // end the key's open streams on running instances now
			if err := event.NotifyRevoked(ctx, db.SQL, id); err != nil {
				fmt.Fprintln(stderr, "flytrap: the key is revoked; telling running instances failed:", err)
			}
		}
		fmt.Fprintln(stdout, "revoked", id)
		return nil
	default:
		return fmt.Errorf("unknown keys command %q (want create, list or revoke)", sub)
	}
}

func printKeys(w io.Writer, list []*ent.APIKey) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSCOPE\tPREFIX\tCREATED\tLAST USED\tSTATUS")
	for _, k := range list {
		used, status := "never", "active"
		if k.LastUsedAt != nil {
			used = k.LastUsedAt.UTC().Format("2006-01-02T15:04:05Z")
		}
		if k.RevokedAt != nil {
			status = "revoked " + k.RevokedAt.UTC().Format("2006-01-02T15:04:05Z")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s…\t%s\t%s\t%s\n", k.ID, k.Name, k.Scope.Human(), k.Prefix,
			k.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"), used, status)
	}
	tw.Flush()
}
