package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"entgo.io/ent/dialect"

	"github.com/flytrap/flytrap/crawler"
	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/store"
)

// stats prints the database's size, free disk space, and per table its rows and oldest row.
func stats(fs *flag.FlagSet) action {
	estimate := fs.Bool("estimate", false, "estimate row counts (instant) instead of counting them (seconds on tens of millions of rows)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	refresh := fs.Duration("crawler-ranges-refresh", crawler.DefaultInterval, "the service's --crawler-ranges-refresh, to tell which crawler range lists are stale (0: refresh off)")
	return action{run: func(ctx context.Context, c *call) error {
		st, err := c.db.Stats(ctx, !*estimate)
		if err != nil {
			return err
		}
		ranges := crawlerRanges(st, *refresh, time.Now())
		if *asJSON {
			enc := json.NewEncoder(c.stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(struct {
				*store.Stats
				CrawlerRanges []crawler.ListStatus `json:"crawler_ranges"`
			}{st, ranges})
		}
		printStats(c.stdout, st)
		printRanges(c.stdout, ranges)
		return nil
	}}
}

// crawlerRanges is every crawler range list as a restarted service would start from it:
// the stored fetch, else the embedded snapshot; stale by the service's refresh interval.
func crawlerRanges(st *store.Stats, refresh time.Duration, now time.Time) []crawler.ListStatus {
	stored := map[string]store.CrawlerRangeStats{}
	for _, l := range st.CrawlerRanges {
		stored[l.Name] = l
	}
	emb := detect.EmbeddedRanges()
	var out []crawler.ListStatus
	for _, s := range crawler.Sources {
		ls := crawler.ListStatus{Name: s.Name, Operator: s.Operator, URL: s.URL, Source: "embedded"}
		for _, l := range emb {
			if slices.ContainsFunc(l.Agents, func(a string) bool { return slices.Contains(s.Agents, a) }) {
				ls.AsOf, ls.Prefixes = l.AsOf, len(l.Prefixes)
				break
			}
		}
		if l, ok := stored[s.Name]; ok {
			ls.URL, ls.CheckedAt, ls.LastError = l.URL, l.CheckedAt, l.LastError
			if l.FetchedAt != nil && l.Prefixes > 0 { // else never fetched good: the embedded copy serves
				ls.Source, ls.FetchedAt, ls.Prefixes, ls.AsOf = "stored", l.FetchedAt.UTC(), l.Prefixes, l.FetchedAt.UTC()
				if l.ListTime != nil {
					ls.AsOf = l.ListTime.UTC()
				}
			}
		}
		ls.Stale = crawler.Stale(ls, refresh, crawler.DefaultStaleAfter, now)
		out = append(out, ls)
	}
	return out
}

func printRanges(w io.Writer, ranges []crawler.ListStatus) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "CRAWLER RANGES\tFROM\tLIST DATE\tFETCHED\tPREFIXES\tSTALE\tLAST ERROR\n")
	day := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	for _, l := range ranges {
		stale, lastErr := "no", "-"
		if l.Stale {
			stale = "STALE"
		}
		if l.LastError != "" {
			lastErr = l.LastError
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", l.Name, l.Source, day(l.AsOf), day(l.FetchedAt), l.Prefixes, stale, lastErr)
	}
	tw.Flush()
}

func printStats(w io.Writer, st *store.Stats) {
	where := st.Path
	if st.Dialect == dialect.Postgres {
		where = "PostgreSQL (pg_database_size)"
	}
	fmt.Fprintf(w, "database  %s\nsize      %s\n", where, bytesHuman(st.SizeBytes))
	if st.FreeBytes >= 0 {
		fmt.Fprintf(w, "disk free %s\n", bytesHuman(st.FreeBytes))
	}
	rows := "ROWS"
	if !st.Exact {
		rows = "ROWS (ESTIMATED)"
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "TABLE\t%s\tSIZE\tOLDEST\n", rows)
	for _, t := range st.Tables {
		size, oldest := "-", "-"
		if t.SizeBytes >= 0 {
			size = bytesHuman(t.SizeBytes)
		}
		if t.Oldest != nil {
			oldest = t.Oldest.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", t.Name, t.Rows, size, oldest)
	}
	tw.Flush()
}

func bytesHuman(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// vacuum rewrites a SQLite file so it reclaims space: once for a file made before
// incremental auto-vacuum (it converts it), or to compact it. It needs free space about
// the file's size and holds the write lock throughout: stop the service first.
func vacuum(*flag.FlagSet) action {
	return action{run: func(ctx context.Context, c *call) error {
		db := c.db
		if db.Dialect != dialect.SQLite {
			return fmt.Errorf("vacuum is for SQLite; PostgreSQL's autovacuum reuses space (VACUUM FULL or pg_repack to shrink files)")
		}
		before, _ := db.Stats(ctx, false)
		if err := db.Vacuum(ctx); err != nil {
			return err
		}
		if _, err := db.SQL.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		var mode int
		if err := db.SQL.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&mode); err != nil {
			return err
		}
		after, err := db.Stats(ctx, false)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "vacuumed %s: %s → %s, auto_vacuum=%s\n", after.Path, bytesHuman(before.SizeBytes), bytesHuman(after.SizeBytes),
			map[int]string{0: "NONE", 1: "FULL", 2: "INCREMENTAL"}[mode])
		return nil
	}}
}

// backup writes a consistent copy of a SQLite database to a new file while the service
// runs (VACUUM INTO: compacted, and readable at once by flytrap --db).
func backup(fs *flag.FlagSet) action {
	to := fs.String("to", "", "file to write the copy to; it must not exist")
	return action{
		check: func() error {
			if *to == "" {
				return fmt.Errorf("--to: give the file to write the copy to")
			}
			if _, err := os.Stat(*to); err == nil {
				return fmt.Errorf("--to: %s exists; backups never overwrite", *to)
			}
			return nil
		},
		run: func(ctx context.Context, c *call) error {
			db := c.db
			if db.Dialect != dialect.SQLite {
				return fmt.Errorf("backup is for SQLite; back PostgreSQL up with pg_dump (docs/operations.md)")
			}
			if _, err := db.SQL.ExecContext(ctx, "VACUUM INTO ?", *to); err != nil {
				return fmt.Errorf("backup: %w", err)
			}
			fi, err := os.Stat(*to)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "backed up %s to %s (%s)\n", db.Path(), *to, bytesHuman(fi.Size()))
			return nil
		},
	}
}
