package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/crawler"
	"github.com/flytrap/flytrap/detect"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/store"
	"github.com/flytrap/flytrap/webhook"
)

// flytrap stats reports the size, and per table the rows (counted or estimated) and the oldest row.
func TestStats(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		createOrgCLI(t, dsn, "Acme")
		createOrgCLI(t, dsn, "Other")
		out := mustCLI(t, noEnv, "stats", "--db", dsn)
		for _, want := range []string{"size", "hits", "webhook_deliveries", "organizations"} {
			if !strings.Contains(out, want) {
				t.Fatalf("stats lacks %q:\n%s", want, out)
			}
		}
		raw := mustCLI(t, noEnv, "stats", "--json", "--db", dsn)
		// The API's snake_case, not Go's field names.
		for _, key := range []string{`"size_bytes":`, `"free_bytes":`, `"tables":`, `"exact":`, `"rows":`, `"oldest":`, `"name":`} {
			if !strings.Contains(raw, key) {
				t.Fatalf("stats --json lacks %s:\n%s", key, raw)
			}
		}
		if strings.Contains(raw, `"SizeBytes"`) || strings.Contains(raw, `"Tables"`) {
			t.Fatalf("stats --json has Go's field names:\n%s", raw)
		}
		var st store.Stats
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			t.Fatal(err)
		}
		if st.SizeBytes <= 0 || !st.Exact {
			t.Fatalf("stats: %+v", st)
		}
		for _, tb := range st.Tables {
			switch tb.Name {
			case "organizations":
				if tb.Rows != 2 || tb.Oldest == nil {
					t.Fatalf("organizations: %+v", tb)
				}
			case "hits":
				if tb.Rows != 0 || tb.Oldest != nil {
					t.Fatalf("hits: %+v", tb)
				}
			}
		}
		if b.Name == "sqlite" && st.FreeBytes <= 0 {
			t.Fatalf("SQLite stats has no free disk space: %+v", st)
		}
		mustCLI(t, noEnv, "stats", "--estimate", "--db", dsn)
	})
}

// A SQLite file made before incremental auto-vacuum keeps working, and flytrap vacuum converts it once.
func TestVacuumConvertsAnOlderFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	// What an older release left: tables in a file without auto-vacuum.
	if _, err := raw.Exec("CREATE TABLE legacy (a INTEGER)"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	createOrgCLI(t, path, "Acme")
	mode := func() int {
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var m int
		if err := db.QueryRow("PRAGMA auto_vacuum").Scan(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := mode(); m != 0 {
		t.Fatalf("an older file's auto_vacuum changed without VACUUM: %d", m)
	}
	if out := mustCLI(t, noEnv, "vacuum", "--db", path); !strings.Contains(out, "auto_vacuum=INCREMENTAL") {
		t.Fatalf("vacuum printed %q", out)
	}
	if m := mode(); m != 2 {
		t.Fatalf("after flytrap vacuum auto_vacuum is %d, want 2", m)
	}
}

// flytrap backup copies a SQLite database the service has open into a file flytrap opens.
func TestBackup(t *testing.T) {
	dsn := ft.SQLiteDSN(t)
	org := createOrgCLI(t, dsn, "Acme")
	to := filepath.Join(t.TempDir(), "copy.db")
	mustCLI(t, noEnv, "backup", "--db", dsn, "--to", to)
	if out := mustCLI(t, noEnv, "orgs", "list", "--db", to); !strings.Contains(out, org) {
		t.Fatalf("the copy lacks the organization:\n%s", out)
	}
	failCLI(t, noEnv, "backup", "--db", dsn, "--to", to) // never overwrites
}

// flytrap stats shows each crawler range list a restarted service would start from: the
// fetch stored in the database, else the embedded snapshot, stale by the service's interval.
func TestStatsCrawlerRanges(t *testing.T) {
	t.Cleanup(func() { detect.SetRanges(nil) })
	lists := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/googlebot":
			io.WriteString(w, `{"creationTime": "2026-11-26T18:00:13.000000", "prefixes": [{"ipv4Prefix": "66.249.64.0/19"}, {"ipv4Prefix": "198.51.100.0/24"}]}`)
		case "/bingbot":
			io.WriteString(w, `{"prefixes": "not a list"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(lists.Close)
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		createOrgCLI(t, dsn, "Acme") // the schema
		db, err := store.Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		urls := map[string]string{}
		for _, s := range crawler.Sources {
			urls[s.Name] = lists.URL + "/" + s.Name
		}
		r := crawler.NewRefresher(crawler.RefreshConfig{Interval: time.Hour, URLs: urls}, webhook.Guard{AllowPrivate: true}, db.Client, slog.New(slog.NewTextHandler(io.Discard, nil)))
		r.Refresh(context.Background())
		r.Refresh(context.Background()) // a second attempt updates the row, keeps one

		out := mustCLI(t, noEnv, "stats", "--db", dsn)
		row := func(name string) []string {
			for _, l := range strings.Split(out, "\n") {
				if f := strings.Fields(l); len(f) > 0 && f[0] == name {
					return f
				}
			}
			t.Fatalf("no %s row:\n%s", name, out)
			return nil
		}
		if g := row("googlebot"); g[1] != "stored" || g[2] != "2026-11-26T18:00:13Z" || g[4] != "2" || g[5] != "no" {
			t.Errorf("googlebot: %v\n%s", g, out)
		}
		if bg := row("bingbot"); bg[1] != "embedded" || bg[3] != "-" || bg[5] != "STALE" || !strings.Contains(strings.Join(bg[6:], " "), "not a published range list") {
			t.Errorf("bingbot (a bad document, never fetched good: the error stored): %v", bg)
		}
		if g := row("chatgpt-user"); g[1] != "embedded" || g[5] != "STALE" {
			t.Errorf("chatgpt-user (no copy at all): %v", g)
		}
		off := mustCLI(t, noEnv, "stats", "--crawler-ranges-refresh", "0", "--db", dsn)
		if strings.Count(off, "STALE") != 1 { // the column's title
			t.Errorf("refresh off, yet stale lists:\n%s", off)
		}
		var st struct {
			CrawlerRanges []crawler.ListStatus `json:"crawler_ranges"`
		}
		if err := json.Unmarshal([]byte(mustCLI(t, noEnv, "stats", "--json", "--db", dsn)), &st); err != nil {
			t.Fatal(err)
		}
		if len(st.CrawlerRanges) != len(crawler.Sources) || st.CrawlerRanges[0].Name != "googlebot" || st.CrawlerRanges[0].Stale {
			t.Errorf("stats --json: %+v", st.CrawlerRanges)
		}
	})
}
