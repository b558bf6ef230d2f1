#!/usr/bin/env bash
# The trap listener against a bare net/http server writing the same bytes, with wrk (issue 12,
# part 4: "≥ 0.4× a bare handler's requests per second at 128 connections on SQLite").
# Builds flytrap and internal/bareserve, starts flytrap on a fresh SQLite database (every hit
# journaled before its answer, recorded in the database right after), creates a page trap, saves one of its responses as the
# bare server's body, then runs wrk against each in turn, ROUNDS times, alternating, and prints
# requests per second, latency and the ratio. wrk sends every request with one user agent
# from one address: one visitor, one session, as a scanner hammering a trap. Extra arguments
# go to `flytrap serve` (e.g. --db 'postgres://…' for PostgreSQL).
# Needs wrk (apt-get install -y wrk), Go and Node (free ports).
# Usage: bash scripts/listener-wrk.sh [CONNECTIONS=128] [SECONDS=10] [ROUNDS=3] [-- serve flags…]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
name=listener-wrk
conns=${1:-128}
secs=${2:-10}
rounds=${3:-3}
shift $(($# < 3 ? $# : 3))
[[ "${1:-}" == "--" ]] && shift

tmp=$(mktemp -d)
# shellcheck source=lib/flytrap.sh
. scripts/lib/flytrap.sh
command -v wrk >/dev/null || die "wrk is missing: apt-get install -y wrk"
bare_pid=""
cleanup() {
  stop_server
  [[ -n "$bare_pid" ]] && kill "$bare_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

start_page_trap "$@"
sleep 0.5

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; } # the process's user + system CPU, in clock ticks
hz=$(getconf CLK_TCK)
run() { # URL PID → "req/s p50 p99 non-2xx server-CPU-µs-per-request"
  local before after out
  before=$(cpu_ticks "$2")
  out=$(wrk -t"$((conns < 2 ? 1 : 2))" -c"$conns" -d"${secs}s" --latency "$1" |
    awk '/Requests\/sec/ {r=$2} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2} /Non-2xx/ {bad=$NF} END {print r, p50, p99, bad+0}')
  after=$(cpu_ticks "$2")
  read -r rps p50 p99 bad <<<"$out"
  echo "$rps $p50 $p99 $bad $(echo "($after - $before) * 1000000 / $hz / ($rps * $secs)" | bc -l)"
}
echo "$name: page decoy of $(wc -c <"$tmp/page.html") bytes, $conns connections, ${secs} s per run"
echo "$name: cpu = the server process's CPU per request (µs), wrk's own CPU not included"
printf '%-6s %10s %8s %8s %6s %10s %8s %8s %6s %7s %9s\n' round listener p50 p99 cpu bare p50 p99 cpu ratio cpu-ratio
for r in $(seq 1 "$rounds"); do
  read -r lr lp50 lp99 lbad lcpu < <(run "http://127.0.0.1:$trap_port/internal/docs" "$server_pid")
  read -r br bp50 bp99 _ bcpu < <(run "http://127.0.0.1:$bare_port/internal/docs" "$bare_pid")
  [[ "$lbad" == 0 ]] || die "the listener answered $lbad non-2xx responses (shed or failed writes)"
  printf '%-6s %10s %8s %8s %6.1f %10s %8s %8s %6.1f %7.2f %9.2f\n' "$r" "$lr" "$lp50" "$lp99" "$lcpu" "$br" "$bp50" "$bp99" "$bcpu" \
    "$(echo "$lr / $br" | bc -l)" "$(echo "$bcpu / $lcpu" | bc -l)"
done
written=$(curl -fs -H "Authorization: Bearer $key" "http://127.0.0.1:$port/dashboard/api/analytics/overview" |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).data.totalHits24h))')
echo "$name: hits recorded: $written"
