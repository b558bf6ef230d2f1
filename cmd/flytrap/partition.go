package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"entgo.io/ent/dialect"

	"github.com/flytrap/flytrap/retention"
	"github.com/flytrap/flytrap/server"
	"github.com/flytrap/flytrap/store"
)

// partitionHits converts a PostgreSQL database's plain hits table to one partitioned by
// day (store.PartitionHits): the service stopped, once.
func partitionHits(ctx context.Context, args []string, stdout, stderr io.Writer, env server.Env) error {
	fs := newFlagSet("flytrap partition-hits", stderr)
	keep := retention.DefaultConfig().Hits
	fs.Func("retain-hits", "the days back that get a partition each, as serve's --retain-hits (default "+retention.FormatDays(keep)+
		"); older hits go to the default partition, where retention deletes them", func(v string) error {
		d, err := retention.ParseDays(v)
		if err == nil && d == 0 {
			err = errors.New("0 keeps hits forever: give the days back that should get their own partition")
		}
		keep = d
		return err
	})
	if err := parseArgs(fs, args, env, 0); err != nil {
		return err
	}
	db, err := openDB(ctx, fs)
	if err != nil {
		return err
	}
	defer db.Close()
	if db.Dialect != dialect.Postgres {
		return fmt.Errorf("partition-hits is for PostgreSQL; a SQLite database has no partitions")
	}
	now := time.Now()
	n, err := db.PartitionHits(ctx, now, keep)
	if errors.Is(err, store.ErrAlreadyPartitioned) {
		fmt.Fprintln(stdout, "hits is partitioned already: nothing to do")
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "hits is partitioned by day: %d rows copied; a partition a day from %s to %s, older hits in hits_default\n",
		n, store.Day(now.Add(-keep)).Format(time.DateOnly), store.Day(now).AddDate(0, 0, store.PartitionDays).Format(time.DateOnly))
	return nil
}
