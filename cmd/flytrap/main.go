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
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/server"
	"github.com/flytrap/flytrap/store"
	"github.com/flytrap/flytrap/viewer"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, server.OSEnv); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "flytrap:", err)
		}
		os.Exit(2)
	}
}

const usage = `Usage:
  flytrap [serve] [flags]                      run the service
  flytrap orgs create --name NAME              create an organization; prints its id
  flytrap keys create --org ORG_ID --name NAME --scope read-only|read-write|admin
                                               create an API key; prints the key once
  flytrap keys list --org ORG_ID               list an organization's keys
  flytrap keys revoke KEY_ID                   revoke a key at once

Every command takes --db (FLYTRAP_DB). "flytrap serve -h" lists the service's flags.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer, env server.Env) error {
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
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer, env server.Env) error {
	cfg := server.DefaultConfig()
	fs := flag.NewFlagSet("flytrap serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.Register(fs, env)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve takes no arguments, got %q", fs.Args())
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := newLogger(stderr, cfg.LogFormat, cfg.LogLevel)
	db, err := store.Open(ctx, cfg.DB)
	if err != nil {
		return err
	}
	defer db.Close()
	boot, err := bootstrap(ctx, db.Client)
	if err != nil {
		return err
	}
	if boot != nil {
		printBootstrap(stdout, boot, cfg.APIAddr)
		log.Info("created the first organization", "org_id", boot.OrgID, "site_id", boot.SiteID, "key_id", boot.KeyID)
	}
	srv, err := server.New(ctx, cfg, db, log)
	if err != nil {
		return err
	}
	return srv.Run(ctx, nil)
}

func printBootstrap(w io.Writer, b *bootstrapped, addr string) {
	fmt.Fprintf(w, `
================================================================================
 Flytrap created organization %s with an admin API key.
 It is shown this once and cannot be retrieved again; store it somewhere safe:

   %s

 Try it:  curl -s -H 'Authorization: Bearer %s' \
            -H 'Content-Type: application/json' \
            -d '{"query":"{ organization { id name } }"}' http://%s/graphql
================================================================================

`, b.OrgID, b.Key, b.Key, addr)
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

// openDB parses --db for the management commands and opens the database.
func openDB(ctx context.Context, fs *flag.FlagSet, args []string, env server.Env) (*store.DB, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	dsn := fs.Lookup("db").Value.String()
	return store.Open(ctx, dsn)
}

func newFlagSet(name string, stderr io.Writer, env server.Env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := server.DefaultConfig().DB
	server.RegisterDB(fs, &dsn, env)
	return fs
}

func orgs(ctx context.Context, args []string, stdout, stderr io.Writer, env server.Env) error {
	if len(args) == 0 || args[0] != "create" {
		return errors.New("usage: flytrap orgs create --name NAME")
	}
	fs := newFlagSet("flytrap orgs create", stderr, env)
	name := fs.String("name", "", "organization name")
	db, err := openDB(ctx, fs, args[1:], env)
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
}

func keys(ctx context.Context, args []string, stdout, stderr io.Writer, env server.Env) error {
	if len(args) == 0 {
		return errors.New("usage: flytrap keys create|list|revoke …")
	}
	switch sub, rest := args[0], args[1:]; sub {
	case "create":
		fs := newFlagSet("flytrap keys create", stderr, env)
		org := fs.String("org", "", "organization id")
		name := fs.String("name", "", "a name saying what the key is for")
		scope := fs.String("scope", "", "read-only, read-write or admin")
		db, err := openDB(ctx, fs, rest, env)
		if err != nil {
			return err
		}
		defer db.Close()
		sc, err := viewer.ParseScope(*scope)
		if err != nil {
			return fmt.Errorf("--scope: %w", err)
		}
		key, _, err := createKey(ctx, db.Client, *org, *name, sc)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, key)
		return nil
	case "list":
		fs := newFlagSet("flytrap keys list", stderr, env)
		org := fs.String("org", "", "organization id")
		db, err := openDB(ctx, fs, rest, env)
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
		fs := newFlagSet("flytrap keys revoke", stderr, env)
		// Accept the key id before or after the flags.
		var id string
		if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
			id, rest = rest[0], rest[1:]
		}
		db, err := openDB(ctx, fs, rest, env)
		if err != nil {
			return err
		}
		defer db.Close()
		if id == "" && fs.NArg() == 1 {
			id = fs.Arg(0)
		}
		if id == "" {
			return errors.New("usage: flytrap keys revoke KEY_ID")
		}
		if err := revokeKey(ctx, db.Client, id); err != nil {
			return err
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
