#!/usr/bin/env bash
# One trap listener against two on one PostgreSQL database (issue 27, "several instances"), with wrk.
# Starts flytrap (instance A) on the database given with --db, creates a page trap, starts a second
# instance (B) on the same database with its own ports and hit journal, then, ROUNDS times,
# alternating: wrk with CONNECTIONS against A alone, and wrk with CONNECTIONS/2 against each of A
# and B at once (the same load, spread over two instances). Prints requests per second (summed over
# the instances), p99 latency, the instances' CPU per request (their user + system CPU over the
# requests answered, wrk's not included) and that of the PostgreSQL backends serving the database
# (the server's own background processes not included), then checks that every request
# answered 200 is a stored hit (none lost). On a machine of two cores the two instances share them
# with wrk and PostgreSQL: compare CPU per request more than requests per second.
# Needs wrk (apt-get install -y wrk), Go, Node (free ports) and a PostgreSQL database of its own:
#   psql "$FLYTRAP_TEST_POSTGRES_URL" -c 'CREATE DATABASE flytrap_two'
#   bash scripts/listener-two.sh 32 10 3 -- --db 'postgres://postgres@127.0.0.1:5432/flytrap_two?sslmode=disable'
# Usage: bash scripts/listener-two.sh [CONNECTIONS=32] [SECONDS=10] [ROUNDS=3] -- --db POSTGRES-URL [serve flags…]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
name=listener-two
conns=${1:-32}
secs=${2:-10}
rounds=${3:-3}
shift $(($# < 3 ? $# : 3))
[[ "${1:-}" == "--" ]] && shift
[[ " $* " == *" --db postgres"* ]] || { echo "$name: give a PostgreSQL database: -- --db 'postgres://…'" >&2; exit 1; }
((conns >= 2)) || { echo "$name: CONNECTIONS must be at least 2 (half to each instance)" >&2; exit 1; }

tmp=$(mktemp -d)
# shellcheck source=lib/flytrap.sh
. scripts/lib/flytrap.sh
command -v wrk >/dev/null || die "wrk is missing: apt-get install -y wrk"
bare_pid="" b_pid=""
cleanup() {
  stop_server
  if [[ -n "$b_pid" ]] && kill -0 "$b_pid" 2>/dev/null; then
    kill -TERM "$b_pid" 2>/dev/null || true
    wait "$b_pid" || true
  fi
  [[ -n "$bare_pid" ]] && kill "$bare_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

start_page_trap --hit-journal "$tmp/hits-a" "$@"
read -r b_port b_trap_port < <(free_ports)
"$tmp/flytrap" serve --api-addr "127.0.0.1:$b_port" --trap-addr "127.0.0.1:$b_trap_port" --hit-journal "$tmp/hits-b" \
  --rate-limit 100000000 --rate-burst 100000000 --log-format json "$@" >"$tmp/stdout-b" 2>"$tmp/stderr-b" &
b_pid=$!
for _ in $(seq 1 300); do curl -fs -o /dev/null "http://127.0.0.1:$b_trap_port/internal/docs" && break; sleep 0.1; done
curl -fs -o /dev/null "http://127.0.0.1:$b_trap_port/internal/docs" || { tail -20 "$tmp/stderr-b" >&2; die "instance B does not serve the trap"; }
sleep 0.5

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; } # the process's user + system CPU, in clock ticks
dbname=$(sed -n 's|.*--db postgres[^ ]*/\([^/?]*\).*|\1|p' <<<" $* ")
db_ticks() { # "pid ticks" of each PostgreSQL backend serving the database (its process title names it)
  local p
  for p in /proc/[0-9]*; do
    { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -q "^postgres: .* $dbname " &&
      awk -v pid="${p#/proc/}" '{print pid, $14 + $15}' "$p/stat" 2>/dev/null
  done
  true
}
db_used() { # BEFORE AFTER: ticks the backends used between two db_ticks (a backend gone meanwhile is not counted)
  awk 'NR == FNR {b[$1] = $2; next} {u += $2 - b[$1]} END {print u + 0}' "$1" "$2"
}
hz=$(getconf CLK_TCK)
wrk_run() { # URL CONNECTIONS OUT: wrk's summary "req/s p99 non-2xx requests" into OUT
  wrk -t"$(($2 < 2 ? 1 : 2))" -c"$2" -d"${secs}s" --latency "$1" |
    awk '/requests in/ {n=$1} /Requests\/sec/ {r=$2} /^ +99%/ {p99=$2} /Non-2xx/ {bad=$NF} END {print r, p99, bad+0, n}' >"$3"
}
answered=0
check() { # NON-2xx…: dies on any
  local b
  for b in "$@"; do [[ "$b" == 0 ]] || die "an instance answered $b non-2xx responses (shed or failed writes)"; done
}
echo "$name: page of $(wc -c <"$tmp/page.html") bytes, $conns connections in all, ${secs} s per run, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$name: cpu = the instances' CPU per request answered (µs), summed over both in the two-instance runs"
echo "$name: db-cpu = the CPU of PostgreSQL's backends serving $dbname per request (µs)"
printf '%-6s %-10s %10s %8s %8s %8s\n' round instances req/s p99 cpu db-cpu
for r in $(seq 1 "$rounds"); do
  db_ticks >"$tmp/db0"
  a0=$(cpu_ticks "$server_pid")
  wrk_run "http://127.0.0.1:$trap_port/internal/docs" "$conns" "$tmp/one"
  a1=$(cpu_ticks "$server_pid")
  db_ticks >"$tmp/db1"
  read -r rps p99 bad n <"$tmp/one"
  check "$bad"
  answered=$((answered + n))
  printf '%-6s %-10s %10.0f %8s %8.1f %8.1f\n' "$r" 1 "$rps" "$p99" "$(echo "($a1 - $a0) * 1000000 / $hz / $n" | bc -l)" \
    "$(echo "$(db_used "$tmp/db0" "$tmp/db1") * 1000000 / $hz / $n" | bc -l)"

  db_ticks >"$tmp/db0"
  a0=$(cpu_ticks "$server_pid") b0=$(cpu_ticks "$b_pid")
  wrk_run "http://127.0.0.1:$trap_port/internal/docs" "$((conns / 2))" "$tmp/a" &
  wa=$!
  wrk_run "http://127.0.0.1:$b_trap_port/internal/docs" "$((conns - conns / 2))" "$tmp/b"
  wait "$wa"
  a1=$(cpu_ticks "$server_pid") b1=$(cpu_ticks "$b_pid")
  db_ticks >"$tmp/db1"
  read -r ra pa bada na <"$tmp/a"
  read -r rb pb badb nb <"$tmp/b"
  check "$bada" "$badb"
  answered=$((answered + na + nb))
  printf '%-6s %-10s %10.0f %8s %8.1f %8.1f\n' "$r" "2 (A+B)" "$(echo "$ra + $rb" | bc -l)" "$pa/$pb" \
    "$(echo "($a1 - $a0 + $b1 - $b0) * 1000000 / $hz / ($na + $nb)" | bc -l)" \
    "$(echo "$(db_used "$tmp/db0" "$tmp/db1") * 1000000 / $hz / ($na + $nb)" | bc -l)"
done
# Every answered request must be a stored hit: each instance applies its journal's last hits
# within moments (B's are counted through A's API: one database).
written=0
for _ in $(seq 1 60); do
  written=$(curl -fs -H "Authorization: Bearer $key" "http://127.0.0.1:$port/dashboard/api/analytics/overview" |
    node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).data.totalHits24h))')
  ((written >= answered)) && break
  sleep 0.5
done
echo "$name: the instances answered $answered requests 200 (wrk's count), hits recorded: $written"
((written >= answered)) || die "$((answered - written)) answered hits are not stored"
