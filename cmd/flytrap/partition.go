package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"entgo.io/ent/dialect"

	"github.com/flytrap/flytrap/retention"
	"github.com/flytrap/flytrap/store"
)

// partitionTable is flytrap partition-hits and partition-events: it converts a PostgreSQL
// database's plain hits or events table to one partitioned by day (store.Partition), the
// service stopped, once. Retention's default for the table is the days that get a
// partition (keepByDefault), which its --retain-TABLE flag overrides.
func partitionTable(table string, keepByDefault time.Duration) func(*flag.FlagSet) action {
	return func(fs *flag.FlagSet) action {
		cmd := "partition-" + table
		keep := keepByDefault
		fs.Func("retain-"+table, "the days back that get a partition each, as serve's --retain-"+table+" (default "+retention.FormatDays(keep)+
			"); older rows go to the default partition, where retention deletes them", func(v string) error {
			d, err := retention.ParseDays(v)
			if err == nil && d == 0 {
				err = fmt.Errorf("0 keeps %s forever: give the days back that should get their own partition", table)
			}
			keep = d
			return err
		})
		return action{run: func(ctx context.Context, c *call) error {
			if c.db.Dialect != dialect.Postgres {
				return fmt.Errorf("%s is for PostgreSQL; a SQLite database has no partitions", cmd)
			}
			now := time.Now()
			n, err := c.db.Partition(ctx, table, now, keep)
			if errors.Is(err, store.ErrAlreadyPartitioned) {
				fmt.Fprintf(c.stdout, "%s is partitioned already: nothing to do\n", table)
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "%s is partitioned by day: %d rows copied; a partition a day from %s to %s, older rows in %s_default\n",
				table, n, store.Day(now.Add(-keep)).Format(time.DateOnly), store.Day(now).AddDate(0, 0, store.PartitionDays).Format(time.DateOnly), table)
			return nil
		}}
	}
}
