package server

import (
	"context"
	"log/slog"
	"time"

	"entgo.io/ent/dialect"

	"github.com/flytrap/flytrap/graph/model"
	"github.com/flytrap/flytrap/retention"
	"github.com/flytrap/flytrap/store"
)

// runRetention purges expired rows until ctx ends (one instance at a time on PostgreSQL).
func (s *Server) runRetention(ctx context.Context) {
	NewPurger(s.db, s.cfg.Retention, s.log, time.Now).Run(ctx)
}

// NewPurger is the retention purge of db. The counters of stored sessions (per severity
// and classification, tripwires, prompts) lose the deleted ones in the deleting transaction
// (record.DeleteExpiredSessions); hourly hit buckets need nothing: a purged hit still
// happened in its hour.
func NewPurger(db *store.DB, cfg retention.Config, log *slog.Logger, now func() time.Time) *retention.Purger {
	return retention.New(db.SQL, db.Dialect, cfg, log, now)
}

// partitionInterval is how often the partitions ahead are looked at: a day's partition is
// made PartitionDays days before it starts, so many runs can fail before a hit lands in default.
const partitionInterval = time.Hour

// ensurePartitions creates the partitions ahead (PostgreSQL, --pg-partitions) once, before
// the listeners take traffic, so the first hits land in their day's partition.
func (s *Server) ensurePartitions(ctx context.Context) {
	if !s.cfg.PGPartitions {
		return
	}
	made, err := s.db.EnsurePartitions(ctx, time.Now())
	switch {
	case err != nil:
		s.log.Error("partitions: could not create the partitions ahead; rows land in the default partition meanwhile, and the next run retries", "err", err)
	case len(made) > 0:
		s.log.Info("partitions: created", "partitions", made)
	}
}

// runPartitions keeps the partitions ahead until ctx ends.
func (s *Server) runPartitions(ctx context.Context) {
	if !s.cfg.PGPartitions || s.db.Dialect != dialect.Postgres {
		return
	}
	t := time.NewTicker(partitionInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.ensurePartitions(ctx)
		}
	}
}

// diskCheckInterval is how often the SQLite file's free space is looked at.
const diskCheckInterval = time.Minute

// watchDisk warns in the log while the SQLite file's file system runs low on space (below
// --disk-low-bytes), at once and then hourly, and says when it recovers. Writes fail on a
// full disk (the trap listener sheds hits with 503, the API's writes fail) while reads go
// on. PostgreSQL's disk is its server's to watch: flytrap stats reports pg_database_size.
func (s *Server) watchDisk(ctx context.Context) {
	path := s.db.Path()
	if path == "" || s.cfg.DiskLowBytes <= 0 {
		return
	}
	var warned time.Time
	check := func() {
		free, err := store.FreeSpace(path)
		if err != nil {
			return
		}
		switch low := free < s.cfg.DiskLowBytes; {
		case low && time.Since(warned) >= time.Hour:
			warned = time.Now()
			s.log.Warn("disk space is low on the database's file system: writes will fail when it is full (reads go on); shorten retention or free space",
				"free_bytes", free, "threshold_bytes", s.cfg.DiskLowBytes, "db", path)
		case !low && !warned.IsZero():
			warned = time.Time{}
			s.log.Info("disk space on the database's file system is above the threshold again", "free_bytes", free)
		}
	}
	check()
	t := time.NewTicker(diskCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			check()
		}
	}
}

// storageReport is the storage field: the database measured cheaply (estimated rows), and
// the retention settings.
func (s *Server) storageReport(ctx context.Context) (*model.Storage, error) {
	st, err := s.db.Stats(ctx, false)
	if err != nil {
		return nil, err
	}
	out := &model.Storage{Dialect: st.Dialect, SizeBytes: int(st.SizeBytes)}
	if st.FreeBytes >= 0 {
		free := int(st.FreeBytes)
		out.FreeBytes = &free
	}
	for _, t := range st.Tables {
		row := &model.StorageTable{Name: t.Name, Rows: int(t.Rows), Oldest: t.Oldest}
		if t.SizeBytes >= 0 {
			size := int(t.SizeBytes)
			row.SizeBytes = &size
		}
		out.Tables = append(out.Tables, row)
	}
	r := s.cfg.Retention
	sec := func(d time.Duration) int { return int(d / time.Second) }
	out.Retention = &model.RetentionSettings{Hits: sec(r.Hits), Signals: sec(r.Signals), Prompts: sec(r.Prompts),
		Events: sec(r.Events), Deliveries: sec(r.Deliveries), Sessions: sec(r.Sessions), HitHours: sec(r.HitHours)}
	return out, nil
}
