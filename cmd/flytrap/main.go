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

	"github.com/flytrap/flytrap/internal/gcfloor"
	"github.com/flytrap/flytrap/server"
	"github.com/flytrap/flytrap/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, server.OSEnv)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	default:
		fmt.Fprintln(os.Stderr, "flytrap:", err)
		os.Exit(exitCode(err))
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, env server.Env) error {
	if len(args) > 0 && isHelp(args[0]) {
		return help(ctx, args[1:], stdout, env)
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return serve(ctx, args, stdout, stderr, env)
	}
	c, rest, err := find(args, stderr)
	if err != nil {
		return err
	}
	return c.exec(ctx, rest, stdout, stderr, env)
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
 Lost the key? "flytrap admin orgs list", then "flytrap admin keys create --org ORG_ID
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
