#!/usr/bin/env bash
# The event log's reads on PostgreSQL, partitioned by day against one table (docs/benchmarks.md,
# "Events API"). Makes a database with flytrap's schema (events partitioned, 40
# days of partitions), writes N events (default 1,000,000) of 10 organizations spread over the
# last 30 days, copies them into a plain table with the same indexes, and times each query the
# service sends with pgbench (prepared, one client): a tailing cursor, the first and a middle
# page, the oldest event (the 410 check), a page of one type, the broker's scan, one by id.
# Needs a PostgreSQL server (PGURL, default the local one as postgres) and its client tools.
# Usage: bash scripts/events-partition-reads.sh [N] [SECONDS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
n=${1:-1000000} secs=${2:-5}
base=${PGURL:-postgres://postgres@127.0.0.1:5432}
db=flytrap_events_bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
psql -X -q "$base/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
url="$base/$db?sslmode=disable"
go run ./cmd/flytrap admin stats --db "$url" >/dev/null # migrates: events partitioned, today and 7 days ahead
psql -X -q -v ON_ERROR_STOP=1 "$url" <<SQL
DO \$\$ DECLARE d date; BEGIN
FOR d IN SELECT generate_series(current_date - 31, current_date - 1, '1 day')::date LOOP
  EXECUTE format('CREATE TABLE events_p%s PARTITION OF events FOR VALUES FROM (%L) TO (%L)', to_char(d,'YYYYMMDD'), d::timestamptz, (d+1)::timestamptz);
END LOOP; END \$\$;
INSERT INTO organizations (id, name, created_at) SELECT 'org_' || i, 'o' || i, now() FROM generate_series(1, 10) i;
INSERT INTO events (id, org_id, position, seq, type, api_version, created_at, data)
SELECT 'evt_' || lpad(s::text, 10, '0'), 'org_' || (s % 10 + 1), s / 10 + 1, s, 'threat.detected', '2026-11-22',
       now() - interval '30 days' + (s * interval '30 days' / $n), '{"session":{"id":"ses_x","severity":"HIGH"},"n":1}'
FROM generate_series(1, $n) s;
CREATE TABLE events_flat (LIKE events INCLUDING DEFAULTS);
INSERT INTO events_flat SELECT * FROM events;
ALTER TABLE events_flat ADD PRIMARY KEY (id);
CREATE UNIQUE INDEX ON events_flat (org_id, position);
CREATE UNIQUE INDEX ON events_flat (seq);
CREATE INDEX ON events_flat (org_id, type, position);
ANALYZE events; ANALYZE events_flat;
SQL
parts=$(psql -X -qtA "$url" -c "SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass")
per=$((n / 10))
declare -A q=(
  [tail]="SELECT id, position, type, created_at, data FROM @T@ WHERE org_id = 'org_3' AND position > $((per - 10)) ORDER BY position LIMIT 101"
  [first]="SELECT id, position, type, created_at, data FROM @T@ WHERE org_id = 'org_3' AND position > 0 ORDER BY position LIMIT 101"
  [middle]="SELECT id, position, type, created_at, data FROM @T@ WHERE org_id = 'org_3' AND position > $((per / 2)) ORDER BY position LIMIT 101"
  [oldest]="SELECT id, position FROM @T@ WHERE org_id = 'org_3' ORDER BY position LIMIT 1"
  [typed]="SELECT id, position FROM @T@ WHERE org_id = 'org_3' AND type IN ('trap.created', 'threat.escalated') AND position > 0 ORDER BY position LIMIT 101"
  [broker]="SELECT id, seq, org_id, type, created_at, data FROM @T@ WHERE seq > $((n - 10)) ORDER BY seq LIMIT 500"
  [byid]="SELECT id, position FROM @T@ WHERE id = 'evt_$(printf %010d $((n / 2)))'"
)
printf '%s events, %s partitions; latency per query (ms), pgbench -M prepared, 1 client, %ss each\n' "$n" "$parts" "$secs"
printf '%-8s %12s %12s\n' query partitioned one-table
for k in tail first middle oldest typed broker byid; do
  row=$(printf '%-8s' "$k")
  for t in events events_flat; do
    echo "${q[$k]//@T@/$t};" >"$tmp/q.sql"
    ms=$(pgbench -n -M prepared -T "$secs" -c 1 -f "$tmp/q.sql" "$url" 2>&1 | sed -n 's/^latency average = \([0-9.]*\) ms/\1/p')
    row+=$(printf ' %12s' "$ms")
  done
  echo "$row"
done
psql -X -q "$base/postgres" -c "DROP DATABASE $db WITH (FORCE)"
