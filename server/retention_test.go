package server_test

import (
	"bytes"
	"context"
	"flag"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/retention"
	"github.com/flytrap/flytrap/server"
	"github.com/flytrap/flytrap/store"
)

// Retention comes from flags and FLYTRAP_RETAIN_* variables, in days or any duration, 0 for forever.
func TestRetentionFlags(t *testing.T) {
	parse := func(args []string, env map[string]string) (server.Config, error) {
		cfg := server.DefaultConfig()
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cfg.Register(fs)
		err := server.ParseFlags(fs, args, func(k string) string { return env[k] })
		if err == nil {
			err = cfg.Validate()
		}
		return cfg, err
	}
	cfg, err := parse(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.Retention; r.Hits != 30*retention.Day || r.Events != 30*retention.Day || r.Sessions != 90*retention.Day || r.HitHours != 400*retention.Day {
		t.Fatalf("defaults: %s", r)
	}
	cfg, err = parse([]string{"--retain-hits", "7d", "--retain-sessions", "0"}, map[string]string{"FLYTRAP_RETAIN_EVENTS": "36h", "FLYTRAP_RETAIN_HITS": "1d",
		"FLYTRAP_RETAIN_HIT_HOURS": "800d"})
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.Retention; r.Hits != 7*retention.Day || r.Events != 36*time.Hour || r.Sessions != 0 || r.HitHours != 800*retention.Day {
		t.Fatalf("parsed: %s", r)
	}
	for _, bad := range [][]string{{"--retain-hits", "7"}, {"--retain-events", "10m"}, {"--retention-batch", "0"}, {"--retain-sessions", "-1d"}, {"--retain-hit-hours", "30m"}} {
		if _, err := parse(bad, nil); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// syncBuffer is a log destination the test reads while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// The log warns when the SQLite file's file system has less free space than --disk-low-bytes.
func TestDiskLowWarning(t *testing.T) {
	db, err := store.Open(context.Background(), ft.SQLiteDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	free, err := store.FreeSpace(db.Path())
	if err != nil {
		t.Skipf("no free-space check here: %v", err)
	}
	for _, tc := range []struct {
		threshold int64
		warn      bool
	}{{free * 4, true}, {1024, false}} {
		cfg := server.DefaultConfig()
		cfg.APIAddr, cfg.TrapAddr = "127.0.0.1:0", "127.0.0.1:1"
		cfg.DiskLowBytes = tc.threshold
		var logs syncBuffer
		ctx, cancel := context.WithCancel(context.Background())
		srv, err := server.New(ctx, cfg, db, slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		wait := srv.Start(ctx)
		deadline := time.Now().Add(5 * time.Second)
		for tc.warn && !strings.Contains(logs.String(), "disk space is low") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		wait()
		if got := strings.Contains(logs.String(), "disk space is low"); got != tc.warn {
			t.Errorf("threshold %d with %d free: warned %t, want %t\n%s", tc.threshold, free, got, tc.warn, logs.String())
		}
	}
}

// The storage field tells an admin the database's size, tables and retention; others get FORBIDDEN.
func TestStorageField(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		env.CreateTrap(a.ReadWrite, "t", "page")
		const q = `{ storage { dialect sizeBytes freeBytes tables { name rows sizeBytes oldest } retention { hits events sessions hitHours } } }`
		for _, key := range []string{a.ReadOnly, a.ReadWrite} {
			if r := env.GraphQL(key, q, nil); r.Code() != "FORBIDDEN" {
				t.Fatalf("storage for a non-admin: %s", r.Raw)
			}
		}
		data := env.MustGraphQL(a.Admin, q, nil)
		st := data["storage"].(map[string]any)
		if st["sizeBytes"].(float64) <= 0 || ft.Dig(st, "retention", "hits").(float64) != 30*86400 || ft.Dig(st, "retention", "sessions").(float64) != 90*86400 ||
			ft.Dig(st, "retention", "hitHours").(float64) != 400*86400 {
			t.Fatalf("storage: %v", st)
		}
		if (b.Name == "sqlite") != (st["freeBytes"] != nil) {
			t.Fatalf("freeBytes on %s: %v", b.Name, st["freeBytes"])
		}
		found := false
		for _, tb := range st["tables"].([]any) {
			m := tb.(map[string]any)
			if m["name"] == "traps" {
				found = m["oldest"] != nil
			}
		}
		if !found {
			t.Fatalf("the traps table has no oldest row: %v", st["tables"])
		}
	})
}
