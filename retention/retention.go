// Package retention deletes what is older than the operator keeps: raw hits, signals,
// captured prompts, events, webhook deliveries and whole sessions. It deletes in small
// batches, each its own short transaction with a pause after it, so the hit writer and
// the API never wait on it for long; one instance purges at a time when several share a
// PostgreSQL database; on SQLite it hands the freed pages back to the file system.
//
// A whole session and its evidence are deleted through the record package, the one owner
// of what the trap listener records, which takes the session out of the counters of stored
// sessions in the deleting transaction. The hourly hit buckets and the campaigns count what
// happened, not what is still stored: deleting hits and prompts leaves them as they are.
// docs/operations.md says what each setting covers.
package retention

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"entgo.io/ent/dialect"
	"github.com/lib/pq"
	"github.com/oklog/ulid/v2"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/record"
	"github.com/flytrap/flytrap/store"
	"github.com/flytrap/flytrap/store/sqltext"
)

// Config says how long each kind of row is kept; 0 keeps it forever.
type Config struct {
	Hits       time.Duration
	Signals    time.Duration
	Prompts    time.Duration
	Events     time.Duration
	Deliveries time.Duration // finished webhook deliveries (pending ones are kept until they finish)
	// Sessions are deleted with their hits, signals and prompts once last seen this long ago.
	Sessions time.Duration
	// HitHours are the hourly hit counters (hit_hours): the timeline and the 24-hour figures
	// read the last day of them; they outlive the hits they count.
	HitHours time.Duration

	Interval  time.Duration // time between purges
	BatchSize int           // rows deleted per transaction
	Pause     time.Duration // rest after each batch, so writers get the database
}

// Day is 24 hours, the unit retention is usually given in.
const Day = 24 * time.Hour

// DefaultConfig keeps raw hits and events 30 days (events as Stripe keeps them),
// sessions with their signals and prompts 90 days, the hourly hit counters 400 days (a year
// and a month: a year's activity to compare with).
func DefaultConfig() Config {
	return Config{
		Hits: 30 * Day, Signals: 90 * Day, Prompts: 90 * Day, Events: 30 * Day, Deliveries: 30 * Day, Sessions: 90 * Day,
		HitHours: 400 * Day,
		Interval: 10 * time.Minute, BatchSize: 500, Pause: 20 * time.Millisecond,
	}
}

// Validate checks the settings once.
func (c Config) Validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"retain-hits", c.Hits}, {"retain-signals", c.Signals}, {"retain-prompts", c.Prompts},
		{"retain-events", c.Events}, {"retain-deliveries", c.Deliveries}, {"retain-sessions", c.Sessions},
		{"retain-hit-hours", c.HitHours}} {
		if d.v != 0 && d.v < time.Hour {
			errs = append(errs, fmt.Errorf("%s: must be 0 (keep forever) or at least 1h, got %s", d.name, d.v))
		}
	}
	if c.Interval < time.Second {
		errs = append(errs, errors.New("retention-interval: must be at least 1s"))
	}
	if c.BatchSize < 1 || c.BatchSize > 10000 {
		errs = append(errs, errors.New("retention-batch: must be between 1 and 10000"))
	}
	if c.Pause < 0 {
		errs = append(errs, errors.New("retention-pause: must not be negative"))
	}
	return errors.Join(errs...)
}

// Enabled says whether anything is ever deleted.
func (c Config) Enabled() bool {
	return c.Hits > 0 || c.Signals > 0 || c.Prompts > 0 || c.Events > 0 || c.Deliveries > 0 || c.Sessions > 0 || c.HitHours > 0
}

// String is the settings for a log line.
func (c Config) String() string {
	f := func(d time.Duration) string {
		if d == 0 {
			return "forever"
		}
		return FormatDays(d)
	}
	return fmt.Sprintf("hits=%s signals=%s prompts=%s events=%s deliveries=%s sessions=%s hit-hours=%s",
		f(c.Hits), f(c.Signals), f(c.Prompts), f(c.Events), f(c.Deliveries), f(c.Sessions), f(c.HitHours))
}

// ParseDays reads a retention: "30d", "12h", "720h30m" or "0" (forever).
func ParseDays(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 0 || days > 100*365 {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		return time.Duration(days) * Day, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration (30d, 12h or 0 for forever)", s)
	}
	return d, nil
}

// FormatDays writes d as ParseDays reads it, in days when it is whole days.
func FormatDays(d time.Duration) string {
	if d > 0 && d%Day == 0 {
		return strconv.FormatInt(int64(d/Day), 10) + "d"
	}
	return d.String()
}

// Result counts what one purge deleted.
type Result struct {
	Hits, Signals, Prompts, Events, Deliveries, Sessions int64
	HitHours                                             int64 // hourly hit counter rows
	Campaigns                                            int64 // campaigns with nothing of them stored
	Ja4Campaigns                                         int64 // JA4 campaigns with nothing of them stored
	IdempotencyKeys                                      int64 // Idempotency-Keys older than app.IdempotencyWindow
	// Skipped is set when another instance held the purge lock.
	Skipped bool
	// FreedPages is what SQLite's incremental vacuum handed back to the file system.
	FreedPages int64
	// DroppedPartitions is how many partitions were dropped whole (PostgreSQL); their rows
	// are counted with the rest (Hits).
	DroppedPartitions int
}

// Total is the number of rows deleted.
func (r Result) Total() int64 {
	return r.Hits + r.Signals + r.Prompts + r.Events + r.Deliveries + r.Sessions + r.HitHours + r.Campaigns + r.Ja4Campaigns + r.IdempotencyKeys
}

// Purger deletes expired rows.
type Purger struct {
	db      *sql.DB
	dialect string
	cfg     Config
	log     *slog.Logger
	now     func() time.Time
	// refused names the events partitions whose drop was refused (keepsLogsWhole), logged once.
	refused map[string]bool

	// VacuumPages bounds the pages one incremental_vacuum step frees (SQLite), so the
	// write lock is held briefly; steps repeat with a pause until nothing is free.
	VacuumPages int
}

// New makes a purger over db (dia is dialect.SQLite or dialect.Postgres); now is the clock.
func New(db *sql.DB, dia string, cfg Config, log *slog.Logger, now func() time.Time) *Purger {
	return &Purger{db: db, dialect: dia, cfg: cfg, log: log, now: now, VacuumPages: 1024}
}

// lockKey is the PostgreSQL advisory lock one purging instance holds ("Flytrap" + 2).
const lockKey = 0x466c797472617002

// Run purges every Interval until ctx ends, the first time shortly after start.
func (p *Purger) Run(ctx context.Context) {
	if !p.cfg.Enabled() {
		return
	}
	first := time.NewTimer(time.Minute)
	defer first.Stop()
	select {
	case <-ctx.Done():
		return
	case <-first.C:
	}
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		res, err := p.Purge(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			p.log.Error("retention: purge failed; the next run retries", "err", err, "deleted", res.Total())
		case res.Total() > 0 || res.FreedPages > 0:
			p.log.Info("retention: purged expired rows", "hits", res.Hits, "signals", res.Signals, "prompts", res.Prompts,
				"events", res.Events, "deliveries", res.Deliveries, "sessions", res.Sessions, "hit_hours", res.HitHours, "campaigns", res.Campaigns, "ja4_campaigns", res.Ja4Campaigns, "idempotency_keys", res.IdempotencyKeys, "freed_pages", res.FreedPages,
				"dropped_partitions", res.DroppedPartitions)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Purge deletes every expired row now, batch by batch. On PostgreSQL it first takes an
// advisory lock: when another instance purges, it does nothing (Result.Skipped).
func (p *Purger) Purge(ctx context.Context) (Result, error) {
	var res Result
	if p.dialect == dialect.Postgres {
		conn, err := p.db.Conn(ctx)
		if err != nil {
			return res, err
		}
		defer conn.Close()
		var got bool
		if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", int64(lockKey)).Scan(&got); err != nil {
			return res, fmt.Errorf("take the purge lock: %w", err)
		}
		if !got {
			res.Skipped = true
			return res, nil
		}
		// A session-level lock: released here, or by the server when this connection dies.
		defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(lockKey))
	}
	now := p.now().UTC()
	steps := []struct {
		keep time.Duration
		run  func(context.Context, time.Time, *Result) error
	}{
		// Sessions first: their evidence goes with them, and what stays is then judged on its own age.
		{p.cfg.Sessions, p.purgeSessions},
		{p.cfg.Hits, func(ctx context.Context, cut time.Time, r *Result) error {
			done, err := p.dropPartitions(ctx, "hits", "received_at", cut, r, &r.Hits, nil)
			if err != nil || !done {
				return err
			}
			return p.purgeByID(ctx, "hits", ids.Hit, "received_at", "", cut, &r.Hits)
		}},
		{p.cfg.Signals, func(ctx context.Context, cut time.Time, r *Result) error {
			return p.purgeByID(ctx, "signals", ids.Signal, "created_at", "", cut, &r.Signals)
		}},
		{p.cfg.Prompts, func(ctx context.Context, cut time.Time, r *Result) error {
			return p.purgeByID(ctx, "prompts", ids.Prompt, "created_at", "", cut, &r.Prompts)
		}},
		// After the sessions, hits and prompts: a campaign goes when nothing of it is stored any more.
		{p.cfg.Prompts, func(ctx context.Context, cut time.Time, r *Result) error {
			return p.purgeCampaigns(ctx, "campaigns", "campaign_sessions", "last_prompt_id", ids.Prompt, cut, &r.Campaigns)
		}},
		{p.cfg.Hits, func(ctx context.Context, cut time.Time, r *Result) error {
			return p.purgeCampaigns(ctx, "ja4_campaigns", "ja4_campaign_sessions", "last_hit_id", ids.Hit, cut, &r.Ja4Campaigns)
		}},
		{p.cfg.Deliveries, func(ctx context.Context, cut time.Time, r *Result) error {
			return p.purgeByID(ctx, "webhook_deliveries", ids.Delivery, "created_at", "status <> 'PENDING'", cut, &r.Deliveries)
		}},
		{p.cfg.Events, func(ctx context.Context, cut time.Time, r *Result) error {
			done, err := p.dropPartitions(ctx, "events", "created_at", cut, r, &r.Events, keepsLogsWhole)
			if err != nil || !done {
				return err
			}
			return p.purgeEvents(ctx, cut, r)
		}},
		{p.cfg.HitHours, p.purgeHitHours},
		// Not a setting: a key is worth nothing after its window, whatever else is kept.
		{app.IdempotencyWindow, p.purgeIdempotencyKeys},
	}
	for _, s := range steps {
		if s.keep <= 0 {
			continue
		}
		if err := s.run(ctx, now.Add(-s.keep), &res); err != nil {
			return res, err
		}
	}
	if p.dialect == dialect.SQLite && res.Total() > 0 {
		freed, err := p.vacuum(ctx)
		res.FreedPages = freed
		if err != nil {
			return res, fmt.Errorf("incremental vacuum: %w", err)
		}
	}
	return res, nil
}

// purgeCampaigns deletes the campaigns of table whose last item (column last: a prompt, or a
// hit with the JA4, of id kind) came before cut (so it is past its retention) and none of
// whose sessions is stored (no row in members): all-time counts of nothing stored any more.
// Visitors choose the prompts they leak and the TLS clients they send, so without this every
// distinct one would keep a row forever. Should one come again, its campaign starts anew. A
// writer adding an item meanwhile moves last past cut, which the delete checks on the row it
// deletes.
func (p *Purger) purgeCampaigns(ctx context.Context, table, members, last, kind string, cut time.Time, n *int64) error {
	orgs, err := p.orgs(ctx)
	if err != nil {
		return err
	}
	q := p.rebind("DELETE FROM " + table + " WHERE " + last + " < ? AND id IN (SELECT c.id FROM " + table + " c WHERE c.org_id = ? AND " +
		"c." + last + " < ? AND NOT EXISTS (SELECT 1 FROM " + members + " m WHERE m.campaign_id = c.id) LIMIT " +
		strconv.Itoa(p.cfg.BatchSize) + ")")
	b := bound(kind, cut)
	for _, org := range orgs {
		if err := p.deleteBatches(ctx, "expired "+table, n, q, b, org, b); err != nil {
			return err
		}
	}
	return nil
}

// purgeHitHours deletes the hourly hit counters of hours that ended before cut, a batch
// at a time along the hour index.
func (p *Purger) purgeHitHours(ctx context.Context, cut time.Time, res *Result) error {
	q := p.rebind("DELETE FROM hit_hours WHERE id IN (SELECT id FROM hit_hours WHERE hour < ? LIMIT " + strconv.Itoa(p.cfg.BatchSize) + ")")
	return p.deleteBatches(ctx, "expired hourly counters", &res.HitHours, q, cut.Unix()/3600)
}

// purgeIdempotencyKeys deletes the Idempotency-Keys made before cut, a batch at a time
// along each organization's (org_id, created_at) index. A keyed create deletes its own
// organization's too, but an organization that makes no more keyed creates kept them.
func (p *Purger) purgeIdempotencyKeys(ctx context.Context, cut time.Time, res *Result) error {
	orgs, err := p.orgs(ctx)
	if err != nil {
		return err
	}
	q := p.rebind("DELETE FROM idempotency_keys WHERE id IN (SELECT id FROM idempotency_keys WHERE org_id = ? AND created_at < ? LIMIT " +
		strconv.Itoa(p.cfg.BatchSize) + ")")
	for _, org := range orgs {
		if err := p.deleteBatches(ctx, "expired idempotency keys", &res.IdempotencyKeys, q, org, cut); err != nil {
			return err
		}
	}
	return nil
}

// bound is the smallest id of prefix made at t: every id below it was made before t.
// Ids are ULIDs, so the primary key's index finds old rows without an index of its own.
func bound(prefix string, t time.Time) string {
	var u ulid.ULID
	if err := u.SetTime(ulid.Timestamp(t)); err != nil {
		panic(err) // t before 1970 or past 10889: not a clock
	}
	return ids.Format(prefix, u)
}

// purgeByID deletes rows of table whose id and own time column are both older than cut:
// the id range walks the primary key's index, the time column decides (a row's id and
// its time are made together, but a row is never deleted on its id alone). The outer
// delete names the time too, so on a table partitioned by it only the partitions that
// can hold expired rows are searched.
func (p *Purger) purgeByID(ctx context.Context, table, prefix, timeCol, extra string, cut time.Time, n *int64) error {
	where := "id < ? AND " + timeCol + " < ?"
	if extra != "" {
		where += " AND " + extra
	}
	q := p.rebind("DELETE FROM " + table + " WHERE " + timeCol + " < ? AND id IN (SELECT id FROM " + table + " WHERE " + where +
		" ORDER BY id LIMIT " + strconv.Itoa(p.cfg.BatchSize) + ")")
	b := bound(prefix, cut)
	return p.deleteBatches(ctx, "expired "+table, n, q, cut, b, cut)
}

// deleteBatches runs q, a DELETE of at most one batch, until a run deletes less than a
// batch, resting between runs; it adds the rows deleted to n. what names them in errors.
func (p *Purger) deleteBatches(ctx context.Context, what string, n *int64, q string, args ...any) error {
	for {
		r, err := p.db.ExecContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("delete %s: %w", what, err)
		}
		k, _ := r.RowsAffected()
		*n += k
		if k < int64(p.cfg.BatchSize) {
			return nil
		}
		if err := p.rest(ctx); err != nil {
			return err
		}
	}
}

// dropPartitions drops, on PostgreSQL, every partition of table (range-partitioned by
// column, store.Partitions) whose whole range is older than cut: exactly the rows the
// batched delete would remove there (their column is before cut), at once instead of
// row by row. Each drop counts the partition's rows into n first, in its transaction,
// with the partition share-locked so none arrive meanwhile. The drop waits for the
// parent table's lock at most store's lock timeout (it stalls every query on the table
// while it waits); when it times out, done is false: the table's purge stops for this
// run (deleting those rows one by one would be the slow path the drop avoids) and the
// next run retries. The default partition and a partition reaching past cut are left
// to the batched delete.
//
// When safe is given, a partition is dropped only when safe says so (for events: when that
// leaves no hole in any organization's log, keepsLogsWhole); else it and the later ones are
// left to the batched delete.
func (p *Purger) dropPartitions(ctx context.Context, table, column string, cut time.Time, res *Result, n *int64, safe dropCheck) (done bool, err error) {
	if p.dialect != dialect.Postgres {
		return true, nil
	}
	list, ok, err := store.Partitions(ctx, p.db, table, column)
	if err != nil || !ok {
		return err == nil, err
	}
	for _, part := range list {
		if part.Default || part.To.IsZero() || part.To.After(cut) {
			continue
		}
		k, err := p.dropPartition(ctx, part, safe)
		if errors.Is(err, errUnsafe) {
			level := slog.LevelInfo
			if p.refused[part.Name] {
				level = slog.LevelDebug // said once: a converted log can keep a day refused for weeks
			}
			if p.refused == nil {
				p.refused = map[string]bool{}
			}
			p.refused[part.Name] = true
			p.log.Log(ctx, level, "retention: a partition cannot be dropped whole (an events partition holds events after ones kept elsewhere); deleting its rows one by one instead", "partition", part.Name)
			return true, nil
		}
		if isLockTimeout(err) {
			p.log.Warn("retention: a partition could not be dropped now (its table is busy); the next run retries", "partition", part.Name)
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("drop expired partition %s: %w", part.Name, err)
		}
		*n += k
		res.DroppedPartitions++
		p.log.Debug("retention: dropped an expired partition", "partition", part.Name, "rows", k)
		if err := p.rest(ctx); err != nil {
			return false, err
		}
	}
	return true, nil
}

// dropCheck says, in the transaction that holds partition q share-locked, whether it may be dropped.
type dropCheck func(ctx context.Context, tx *sql.Tx, q string, part store.Partition) (bool, error)

// errUnsafe is dropPartition refusing a drop its check refused.
var errUnsafe = errors.New("dropping the partition is not safe")

// dropPartition counts and drops one partition in one transaction, if safe (when given) agrees.
func (p *Purger) dropPartition(ctx context.Context, part store.Partition, safe dropCheck) (int64, error) {
	name := part.Name
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	q := `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
	var n int64
	if _, err := tx.ExecContext(ctx, "SET LOCAL lock_timeout = '"+store.PartitionLockTimeout+"'"); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, "LOCK TABLE "+q+" IN SHARE MODE"); err != nil {
		return 0, err
	}
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+q).Scan(&n); err != nil {
		return 0, err
	}
	if safe != nil {
		ok, err := safe(ctx, tx, q, part)
		if err != nil {
			return 0, err
		}
		if !ok {
			return 0, errUnsafe
		}
	}
	if _, err := tx.ExecContext(ctx, "DROP TABLE "+q); err != nil {
		return 0, err
	}
	return n, tx.Commit()
}

// keepsLogsWhole says whether dropping the events partition q (part) leaves every
// organization's log without a hole: whether no event kept has a lower seq than the
// partition's highest. Seq and positions are handed out in one commit order, so an
// organization's events below the partition's highest seq are exactly those at lower
// positions. Event times never decrease along seq (event.Append), so this holds but for
// events written before that rule, by instances with clocks apart; the events kept are
// the later partitions' and the default partition's (partitions are dropped oldest first,
// and a refused one stops the drops), each partition's seq index answering at once.
func keepsLogsWhole(ctx context.Context, tx *sql.Tx, q string, part store.Partition) (bool, error) {
	var top, kept sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT max(seq) FROM "+q).Scan(&top); err != nil {
		return false, err
	}
	if !top.Valid {
		return true, nil
	}
	if err := tx.QueryRowContext(ctx, "SELECT min(seq) FROM events WHERE created_at >= $1 OR created_at < $2", part.To, part.From).Scan(&kept); err != nil {
		return false, fmt.Errorf("look for events kept below the partition's: %w", err)
	}
	return !kept.Valid || kept.Int64 > top.Int64, nil
}

// isLockTimeout says err is PostgreSQL's lock_timeout firing (55P03).
func isLockTimeout(err error) bool {
	var pe *pq.Error
	return errors.As(err, &pe) && pe.Code == "55P03"
}

// purgeEvents deletes, per organization, the oldest events created before cut: always
// a run of the first positions, so the log has no holes and a cursor older than the
// oldest event left is known to have missed events (app.ErrEventsGone).
func (p *Purger) purgeEvents(ctx context.Context, cut time.Time, res *Result) error {
	orgs, err := p.orgs(ctx)
	if err != nil {
		return err
	}
	sel := p.rebind("SELECT position, created_at FROM events WHERE org_id = ? ORDER BY position LIMIT " + strconv.Itoa(p.cfg.BatchSize))
	del := p.rebind("DELETE FROM events WHERE org_id = ? AND position <= ?")
	for _, org := range orgs {
		for {
			var last int64
			expired, total := 0, 0
			rows, err := p.db.QueryContext(ctx, sel, org)
			if err != nil {
				return fmt.Errorf("read the oldest events: %w", err)
			}
			for rows.Next() {
				var pos int64
				var at time.Time
				if err := rows.Scan(&pos, &at); err != nil {
					rows.Close()
					return err
				}
				total++
				if expired == total-1 && at.Before(cut) {
					expired, last = total, pos
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			if expired == 0 {
				break
			}
			r, err := p.db.ExecContext(ctx, del, org, last)
			if err != nil {
				return fmt.Errorf("delete expired events: %w", err)
			}
			k, _ := r.RowsAffected()
			res.Events += k
			if expired < total || total < p.cfg.BatchSize {
				break
			}
			if err := p.rest(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// purgeSessions deletes sessions last seen before cut, organization by organization:
// first their hits, signals and prompts (in batches), then the sessions themselves in
// one short transaction that deletes only those still last seen before cut and left
// without evidence. A session the writer touches meanwhile has a later last_seen (on
// PostgreSQL the delete waits for the writer's row lock, then re-reads last_seen), and a
// hit the writer adds makes the foreign key refuse the delete: it is never deleted while
// written to. The session counters lose them in that transaction (record).
func (p *Purger) purgeSessions(ctx context.Context, cut time.Time, res *Result) error {
	orgs, err := p.orgs(ctx)
	if err != nil {
		return err
	}
	sel := p.rebind("SELECT id FROM sessions WHERE org_id = ? AND last_seen < ? ORDER BY last_seen LIMIT " + strconv.Itoa(p.cfg.BatchSize))
	for _, org := range orgs {
		for {
			list, err := p.strings(ctx, sel, org, cut)
			if err != nil {
				return fmt.Errorf("find expired sessions: %w", err)
			}
			if len(list) == 0 {
				break
			}
			for _, ev := range []struct {
				table string
				n     *int64
			}{{"hits", &res.Hits}, {"signals", &res.Signals}, {"prompts", &res.Prompts}} {
				if err := p.deleteEvidence(ctx, ev.table, list, cut, ev.n); err != nil {
					return err
				}
			}
			gone, err := p.deleteSessions(ctx, list, cut)
			if err != nil {
				return err
			}
			res.Sessions += int64(gone)
			if len(list) < p.cfg.BatchSize || gone == 0 {
				break
			}
			if err := p.rest(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteEvidence deletes the rows of table belonging to the sessions in list that are still
// last seen before cut (the writer may have moved one since it was listed), a batch at a time
// (record.DeleteSessionEvidence).
func (p *Purger) deleteEvidence(ctx context.Context, table string, list []string, cut time.Time, n *int64) error {
	for {
		k, err := record.DeleteSessionEvidence(ctx, p.db, p.dialect == dialect.Postgres, table, list, cut, p.cfg.BatchSize)
		if err != nil {
			return err
		}
		*n += k
		if k < int64(p.cfg.BatchSize) {
			return nil
		}
		if err := p.rest(ctx); err != nil {
			return err
		}
	}
}

// deleteSessions deletes the sessions of list still expired and without evidence, in one
// transaction that also takes them out of the session counters (record.DeleteExpiredSessions).
func (p *Purger) deleteSessions(ctx context.Context, list []string, cut time.Time) (int, error) {
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	gone, err := record.DeleteExpiredSessions(ctx, tx, p.dialect == dialect.Postgres, list, cut)
	if isForeignKey(err) {
		return 0, nil // the writer added to one of them meanwhile: it is live again, and the next run looks afresh
	}
	if err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("delete expired sessions: %w", err)
	}
	return len(gone), nil
}

// vacuum hands SQLite's free pages back to the file system, a step at a time.
func (p *Purger) vacuum(ctx context.Context) (int64, error) {
	var mode int
	if err := p.db.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&mode); err != nil {
		return 0, err
	}
	if mode != 2 { // not INCREMENTAL: the file keeps its size (docs/operations.md: the one-time VACUUM)
		return 0, nil
	}
	var freed int64
	for {
		var free int64
		if err := p.db.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&free); err != nil {
			return freed, err
		}
		if free == 0 {
			return freed, nil
		}
		step := min(free, int64(p.VacuumPages))
		// incremental_vacuum returns no rows but must be stepped to run: Exec does.
		if _, err := p.db.ExecContext(ctx, "PRAGMA incremental_vacuum("+strconv.FormatInt(step, 10)+")"); err != nil {
			return freed, err
		}
		freed += step
		if err := p.rest(ctx); err != nil {
			return freed, err
		}
	}
}

// isForeignKey says err is a foreign key's refusal (PostgreSQL 23503, SQLite's constraint message).
func isForeignKey(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "foreign key") || strings.Contains(err.Error(), "FOREIGN KEY"))
}

func (p *Purger) rest(ctx context.Context) error {
	if p.cfg.Pause <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(p.cfg.Pause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (p *Purger) orgs(ctx context.Context) ([]string, error) {
	list, err := p.strings(ctx, "SELECT id FROM organizations ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("list organizations: %w", err)
	}
	return list, nil
}

func (p *Purger) strings(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := p.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// in is a list of placeholders for list, and list as arguments.
func (p *Purger) in(list []string) (string, []any) {
	args := make([]any, len(list))
	for i, s := range list {
		args[i] = s
	}
	return sqltext.In(len(list)), args
}

// rebind numbers the placeholders for PostgreSQL ($1, $2…).
func (p *Purger) rebind(q string) string { return sqltext.Rebind(p.dialect == dialect.Postgres, q) }
