package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"ariga.io/atlas/sql/postgres"
	atlas "ariga.io/atlas/sql/schema"
	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql/schema"
)

// keepPartitioning lets ent's migration run on a PostgreSQL database where a table is
// range-partitioned by time: hits or events as Flytrap creates them on a new database
// (createPartitioned), converts them (Partition) or an operator made them (docs/operations.md, "Hits partitioned by day"). ent's
// description of the table has neither the partitioning nor the primary key a partitioned
// table needs (one that includes the partition key), and Atlas refuses to drop a partition
// key ("drop and add is required"): so before diffing, the desired table takes both from the
// table as it is. Everything else (columns, indexes, foreign keys) is still ent's to manage.
// Tables that are not partitioned are left alone.
func keepPartitioning(next schema.Differ) schema.Differ {
	return schema.DiffFunc(func(current, desired *atlas.Schema) ([]atlas.Change, error) {
		for _, cur := range current.Tables {
			p, ok := partitionOf(cur)
			if !ok || cur.PrimaryKey == nil {
				continue
			}
			want, ok := desired.Table(cur.Name)
			if !ok {
				continue
			}
			pk := &atlas.Index{Name: cur.PrimaryKey.Name, Unique: true, Table: want, Attrs: cur.PrimaryKey.Attrs}
			complete := true
			for _, part := range cur.PrimaryKey.Parts {
				c, ok := want.Column(part.C.Name)
				if part.C == nil || !ok {
					complete = false
					break
				}
				pk.Parts = append(pk.Parts, &atlas.IndexPart{SeqNo: part.SeqNo, C: c, Desc: part.Desc})
			}
			if !complete {
				continue // a key column ent does not know: let Atlas say what it makes of it
			}
			want.PrimaryKey = pk
			want.Attrs = append(want.Attrs, p)
			keyUniqueOnPartition(want, p)
		}
		return next.Diff(current, desired)
	})
}

// keyUniqueOnPartition appends the partition key to each of want's unique indexes that lacks
// it: PostgreSQL accepts a unique index on a partitioned table only when it includes the key.
// On events, (org_id, position) and seq thus become (org_id, position, created_at) and
// (seq, created_at); the counters that hand them out keep them unique (docs/decisions.md,
// "Events partitioned by day"). An index already of that shape is left as it is.
func keyUniqueOnPartition(want *atlas.Table, p *postgres.Partition) {
	if len(p.Parts) != 1 || p.Parts[0].C == nil {
		return
	}
	key, ok := want.Column(p.Parts[0].C.Name)
	if !ok {
		return
	}
	// A column ent marks unique is among them (ent names its index table_column_key).
	for _, ix := range want.Indexes {
		if !ix.Unique || slices.ContainsFunc(ix.Parts, func(part *atlas.IndexPart) bool { return part.C == key }) {
			continue
		}
		ix.Parts = append(ix.Parts, &atlas.IndexPart{SeqNo: len(ix.Parts), C: key})
	}
}

func partitionOf(t *atlas.Table) (*postgres.Partition, bool) {
	for _, a := range t.Attrs {
		if p, ok := a.(*postgres.Partition); ok {
			return p, true
		}
	}
	return nil, false
}

// Time partitions (PostgreSQL): hits is range-partitioned by received_at and events by
// created_at, one partition a UTC day, plus a DEFAULT partition that takes any row outside
// them (docs/operations.md).
const (
	// PartitionDays is how many days after today get their partition ahead of time.
	PartitionDays = 7
	// partitionLock is the advisory lock the instance creating partitions holds ("Flytrap" + 3).
	partitionLock = 0x466c797472617003
	// PartitionLockTimeout bounds how long DDL on a partitioned table waits for its locks:
	// creating or dropping a partition locks the parent table, and everything queued behind
	// that lock waits too (the hit writer included), so the wait is short: the writer's and
	// the API's transactions last milliseconds. A timeout skips the step; the next run (hourly
	// for creation, days ahead; every purge for drops) retries.
	PartitionLockTimeout = "250ms"
)

// TimePartitioned names each table Flytrap partitions by time, with its partition key.
var TimePartitioned = []struct{ Table, Column string }{{"hits", "received_at"}, {"events", "created_at"}}

// Partition is one partition of a table range-partitioned by time.
type Partition struct {
	Name string
	// From and To bound received_at: From ≤ t < To. A zero From is MINVALUE, a zero To MAXVALUE.
	From, To time.Time
	Default  bool
}

// Querier is what reading partitions needs: a *sql.DB, *sql.Conn or *sql.Tx.
type Querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// Partitions lists the partitions of table when it is range-partitioned by column alone
// (PostgreSQL), oldest first with the default partition last; ok is false when it is not.
// PostgreSQL writes the bounds as literals (pg_get_expr) and reads them back itself.
func Partitions(ctx context.Context, q Querier, table, column string) (list []Partition, ok bool, err error) {
	var key sql.NullString
	err = q.QueryRowContext(ctx, `SELECT pg_get_partkeydef(c.oid) FROM pg_class c
		WHERE c.oid = to_regclass($1) AND c.relkind = 'p'`, table).Scan(&key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("inspect %s: %w", table, err)
	}
	if key.String != "RANGE ("+column+")" {
		return nil, false, nil
	}
	rows, err := q.QueryContext(ctx, `SELECT c.relname, b.bound = 'DEFAULT',
			substring(b.bound from $$FROM \('([^']+)'\)$$)::timestamptz,
			substring(b.bound from $$TO \('([^']+)'\)$$)::timestamptz
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS bound) b
		WHERE i.inhparent = to_regclass($1) AND c.relkind = 'r'
		ORDER BY 2, 3 NULLS FIRST`, table)
	if err != nil {
		return nil, false, fmt.Errorf("list the partitions of %s: %w", table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var p Partition
		var from, to sql.NullTime
		if err := rows.Scan(&p.Name, &p.Default, &from, &to); err != nil {
			return nil, false, err
		}
		p.From, p.To = from.Time.UTC(), to.Time.UTC()
		list = append(list, p)
	}
	return list, true, rows.Err()
}

// Overlaps says whether p holds any time in [from, to).
func (p Partition) Overlaps(from, to time.Time) bool {
	return !p.Default && (p.From.IsZero() || p.From.Before(to)) && (p.To.IsZero() || from.Before(p.To))
}

// Day is t's UTC day, as its partition starts.
func Day(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// PartitionName is the name of table's partition for the day starting at day.
func PartitionName(table string, day time.Time) string {
	return table + "_p" + day.Format("20060102")
}

func pgTime(t time.Time) string { return "'" + t.UTC().Format("2006-01-02 15:04:05") + "+00'" }

// createPartitioned creates each table of TimePartitioned that a new PostgreSQL database does
// not have yet as a table partitioned by its time column, with its default partition and the
// days from today on (ent's migration adds the other columns, indexes and foreign keys next,
// keepPartitioning keeping the partitioning). A table that exists is kept as it is: a
// database from before events were partitioned keeps a plain events table until
// `flytrap partition-events` converts it.
func createPartitioned(ctx context.Context, conn *sql.Conn, now time.Time) error {
	made := false
	for _, tp := range TimePartitioned {
		var exists bool
		if err := conn.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, tp.Table).Scan(&exists); err != nil {
			return fmt.Errorf("look for %s: %w", tp.Table, err)
		}
		if exists {
			continue
		}
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		t, c := quote(tp.Table), quote(tp.Column)
		for _, q := range []string{
			"CREATE TABLE " + t + " (id varchar NOT NULL, " + c + " timestamptz NOT NULL, CONSTRAINT " + quote(tp.Table+"_pkey") +
				" PRIMARY KEY (id, " + c + ")) PARTITION BY RANGE (" + c + ")",
			"CREATE TABLE " + quote(tp.Table+"_default") + " PARTITION OF " + t + " DEFAULT",
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("create the partitioned %s table: %w", tp.Table, err)
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		made = true
	}
	if !made {
		return nil
	}
	_, err := ensurePartitions(ctx, conn, now)
	return err
}

// EnsurePartitions creates the partitions of today and the PartitionDays days after it for
// every table Flytrap partitions by time (TimePartitioned) that is range-partitioned on its
// column, skipping days an existing partition covers; it returns the partitions it made.
// One instance does it at a time (an advisory lock); the others wait, then find nothing to do.
// SQLite, and a PostgreSQL table that is plain, have nothing to do.
func (d *DB) EnsurePartitions(ctx context.Context, now time.Time) ([]string, error) {
	if d.Dialect != dialect.Postgres {
		return nil, nil
	}
	conn, err := d.SQL.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", int64(partitionLock)); err != nil {
		return nil, fmt.Errorf("take the partition lock: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(partitionLock))
	return ensurePartitions(ctx, conn, now)
}

func ensurePartitions(ctx context.Context, conn *sql.Conn, now time.Time) ([]string, error) {
	var made []string
	for _, tp := range TimePartitioned {
		list, ok, err := Partitions(ctx, conn, tp.Table, tp.Column)
		if err != nil {
			return made, err
		}
		if !ok {
			continue // a plain table (say hits, with events converted): nothing to make
		}
		var def string
		for _, p := range list {
			if p.Default {
				def = p.Name
			}
		}
	days:
		for day := Day(now); !day.After(Day(now).AddDate(0, 0, PartitionDays)); day = day.AddDate(0, 0, 1) {
			next := day.AddDate(0, 0, 1)
			for _, p := range list {
				if p.Overlaps(day, next) {
					continue days
				}
			}
			name := PartitionName(tp.Table, day)
			if err := createPartition(ctx, conn, tp.Table, tp.Column, def, name, day, next); err != nil {
				return made, err
			}
			made = append(made, name)
		}
	}
	return made, nil
}

// createPartition adds the partition name of table for [from, to). Rows of that range
// already in the default partition (a hit dated ahead of every partition) move into it in
// the same transaction: PostgreSQL refuses to create a partition over rows the default holds.
func createPartition(ctx context.Context, conn *sql.Conn, table, column, def, name string, from, to time.Time) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SET LOCAL lock_timeout = '"+PartitionLockTimeout+"'"); err != nil {
		return err
	}
	bounds := " FOR VALUES FROM (" + pgTime(from) + ") TO (" + pgTime(to) + ")"
	stranded := false
	if def != "" {
		err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+quote(def)+" WHERE "+quote(column)+" >= $1 AND "+quote(column)+" < $2)", from, to).Scan(&stranded)
		if err != nil {
			return fmt.Errorf("look for %s rows of %s in %s: %w", table, from.Format(time.DateOnly), def, err)
		}
	}
	if !stranded {
		if _, err := tx.ExecContext(ctx, "CREATE TABLE "+quote(name)+" PARTITION OF "+quote(table)+bounds); err != nil {
			return fmt.Errorf("create partition %s: %w", name, err)
		}
		if err := noColumnStats(ctx, tx, table, name); err != nil {
			return err
		}
		return tx.Commit()
	}
	cols, err := columns(ctx, tx, table)
	if err != nil {
		return err
	}
	for _, q := range []string{
		"CREATE TABLE " + quote(name) + " (LIKE " + quote(table) + " INCLUDING DEFAULTS INCLUDING CONSTRAINTS)",
		"WITH moved AS (DELETE FROM " + quote(def) + " WHERE " + quote(column) + " >= " + pgTime(from) + " AND " + quote(column) + " < " + pgTime(to) +
			" RETURNING " + cols + ") INSERT INTO " + quote(name) + " (" + cols + ") SELECT " + cols + " FROM moved",
		"ALTER TABLE " + quote(table) + " ATTACH PARTITION " + quote(name) + bounds,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create partition %s over rows of %s: %w", name, def, err)
		}
	}
	if err := noColumnStats(ctx, tx, table, name); err != nil {
		return err
	}
	return tx.Commit()
}

// noStatsColumns are columns ANALYZE keeps no statistics of, by table. hits.session_id: one
// session can be most of a day's partition (a visitor sending a million hits), and with that in
// its most-common values PostgreSQL reads the session's hits in id order along the partition's
// primary key, filtering on session_id — 0.5–1.9 s to skip the other sessions' 667,000 rows —
// where the (session_id, id) index answers in 5 ms (docs/benchmarks.md, run 6). Without
// statistics the planner takes an equality on session_id as selective, which it is for every
// session but the few that fill a partition, and those are the ones it must not walk for.
var noStatsColumns = map[string][]string{"hits": {"session_id"}}

// noColumnStats sets statistics 0 on partition's noStatsColumns of table (a new partition does
// not inherit its table's setting). A column not there yet (the first start makes partitions
// before ent's migration adds the columns) is skipped: the start sets it on the table after.
func noColumnStats(ctx context.Context, x interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, table, partition string) error {
	for _, c := range noStatsColumns[table] {
		var there bool
		if err := x.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = $2 AND NOT attisdropped)`,
			quote(partition), c).Scan(&there); err != nil {
			return fmt.Errorf("statistics of %s.%s: %w", partition, c, err)
		}
		if !there {
			continue
		}
		if _, err := x.ExecContext(ctx, "ALTER TABLE "+quote(partition)+" ALTER COLUMN "+quote(c)+" SET STATISTICS 0"); err != nil {
			return fmt.Errorf("statistics of %s.%s: %w", partition, c, err)
		}
	}
	return nil
}

// columns is table's column list, quoted, in order.
func columns(ctx context.Context, tx *sql.Tx, table string) (string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT attname FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, table)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return "", err
		}
		out = append(out, quote(c))
	}
	return strings.Join(out, ", "), rows.Err()
}

// quote is a PostgreSQL identifier.
func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// ErrAlreadyPartitioned is Partition on a table that is partitioned already.
var ErrAlreadyPartitioned = errors.New("the table is partitioned already")

// Partition converts table (hits or events: TimePartitioned), plain on a PostgreSQL database
// made with --pg-partitions=false or before it was partitioned, to one partitioned by day: in
// one transaction it renames the table aside, creates the partitioned table with its default
// partition and a partition a day from keep before now to PartitionDays after it, copies
// every row (rows older than that land in the default partition, where retention deletes
// them row by row) and drops the old table; then ent's migration adds the indexes and
// foreign keys. It needs free space about the size of the table, and holds it locked
// throughout: stop the service first. It returns the rows copied.
func (d *DB) Partition(ctx context.Context, table string, now time.Time, keep time.Duration) (int64, error) {
	if d.Dialect != dialect.Postgres {
		return 0, errors.New("partitions are for PostgreSQL")
	}
	i := slices.IndexFunc(TimePartitioned, func(tp struct{ Table, Column string }) bool { return tp.Table == table })
	if i < 0 {
		return 0, fmt.Errorf("%s is not a table Flytrap partitions", table)
	}
	n, err := d.partition(ctx, table, TimePartitioned[i].Column, now, keep)
	if err != nil {
		return n, err
	}
	if err := migrateSchema(ctx, d.Client, d.SQL, d.Dialect, Options{}); err != nil {
		return n, fmt.Errorf("add the indexes and foreign keys to the partitioned %s: %w", table, err)
	}
	return n, nil
}

func (d *DB) partition(ctx context.Context, table, column string, now time.Time, keep time.Duration) (int64, error) {
	conn, err := d.SQL.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	// No instance migrates meanwhile.
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", int64(migrationLock)); err != nil {
		return 0, fmt.Errorf("take the migration lock: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(migrationLock))
	var kind string
	if err := conn.QueryRowContext(ctx, `SELECT relkind FROM pg_class WHERE oid = to_regclass($1)`, table).Scan(&kind); err != nil {
		return 0, fmt.Errorf("inspect %s: %w", table, err)
	}
	if kind == "p" {
		return 0, ErrAlreadyPartitioned
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	exec := func(q string) error {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		return nil
	}
	t, c, plain := quote(table), quote(column), quote(table+"_plain")
	if err := exec("LOCK TABLE " + t + " IN ACCESS EXCLUSIVE MODE"); err != nil {
		return 0, err
	}
	if err := exec("ALTER TABLE " + t + " RENAME TO " + plain); err != nil {
		return 0, err
	}
	// Index names are the schema's: the old ones step aside for the ones ent makes next.
	rows, err := tx.QueryContext(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = $1 ORDER BY 1`, table+"_plain")
	if err != nil {
		return 0, err
	}
	var indexes []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return 0, err
		}
		indexes = append(indexes, s)
	}
	rows.Close()
	for i, ix := range indexes {
		if err := exec(fmt.Sprintf(`ALTER INDEX %s RENAME TO %s`, quote(ix), quote(fmt.Sprintf("%s_plain_%d", table, i)))); err != nil {
			return 0, err
		}
	}
	for _, q := range []string{
		"CREATE TABLE " + t + " (LIKE " + plain + " INCLUDING DEFAULTS, CONSTRAINT " + quote(table+"_pkey") + " PRIMARY KEY (id, " + c + ")) PARTITION BY RANGE (" + c + ")",
		"CREATE TABLE " + quote(table+"_default") + " PARTITION OF " + t + " DEFAULT",
	} {
		if err := exec(q); err != nil {
			return 0, err
		}
	}
	for day := Day(now.Add(-keep)); !day.After(Day(now).AddDate(0, 0, PartitionDays)); day = day.AddDate(0, 0, 1) {
		next := day.AddDate(0, 0, 1)
		if err := exec("CREATE TABLE " + quote(PartitionName(table, day)) + " PARTITION OF " + t + " FOR VALUES FROM (" + pgTime(day) + ") TO (" + pgTime(next) + ")"); err != nil {
			return 0, err
		}
	}
	cols, err := columns(ctx, tx, table)
	if err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, "INSERT INTO "+t+" ("+cols+") SELECT "+cols+" FROM "+plain)
	if err != nil {
		return 0, fmt.Errorf("copy %s: %w", table, err)
	}
	n, _ := res.RowsAffected()
	if err := exec("DROP TABLE " + plain); err != nil {
		return 0, err
	}
	return n, tx.Commit()
}
