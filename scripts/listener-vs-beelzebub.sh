#!/usr/bin/env bash
# The trap listener, Beelzebub and a bare net/http server side by side with wrk (issue 27): the
# same page body from each, at 1, 8, 32 and 128 connections, ROUNDS rounds alternating the three,
# so that the machine's noise falls on all of them alike. Prints requests per second, p50/p99
# latency, the server's CPU per request and each honeypot's ratio to bare, then checks that
# every request flytrap answered 200 is a stored hit (none lost).
#
# Beelzebub (github.com/mariocandela/beelzebub, the module github.com/beelzebub-labs/beelzebub/v3)
# is not served by the Go module proxy: build it from its source at commit ea0646d and pass the
# binary's path (not part of CI):
#   git clone https://github.com/mariocandela/beelzebub /tmp/bz && git -C /tmp/bz checkout ea0646d
#   (cd /tmp/bz && go build -o /tmp/beelzebub .)
#   BEELZEBUB=/tmp/beelzebub bash scripts/listener-vs-beelzebub.sh 10 2
# Beelzebub runs with its defaults (a JSON log line per hit to its log file, its 100 MiB memory
# limit) and one HTTP service answering every path with the page, as its http-80.yaml does.
# Usage: BEELZEBUB=PATH bash scripts/listener-vs-beelzebub.sh [SECONDS=10] [ROUNDS=2] [-- serve flags…]
# CONNS="1 8" picks the connection counts. Needs wrk, Go and Node (free ports).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
name=listener-vs-beelzebub
secs=${1:-10}
rounds=${2:-2}
shift $(($# < 2 ? $# : 2))
[[ "${1:-}" == "--" ]] && shift
conns_list=${CONNS:-1 8 32 128}

tmp=$(mktemp -d)
# shellcheck source=lib/flytrap.sh
. scripts/lib/flytrap.sh
command -v wrk >/dev/null || die "wrk is missing: apt-get install -y wrk"
[[ -x "${BEELZEBUB:-}" ]] || die "set BEELZEBUB to a Beelzebub binary built from commit ea0646d (see the comment at the top)"
bare_pid="" bz_pid=""
cleanup() {
  stop_server
  [[ -n "$bare_pid" ]] && kill "$bare_pid" 2>/dev/null || true
  [[ -n "$bz_pid" ]] && kill "$bz_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

start_page_trap "$@"
read -r bz_port _ < <(free_ports)

# Beelzebub: its core configuration with logs into $tmp, one HTTP service with the same body.
mkdir -p "$tmp/bz/services" "$tmp/bz/logs"
cat >"$tmp/bz/beelzebub.yaml" <<EOF
core:
  logging:
    debug: false
    debugReportCaller: false
    logDisableTimestamp: true
    logsPath: $tmp/bz/logs/beelzebub.log
  tracings:
    rabbit-mq:
      enabled: false
      uri: ""
  prometheus:
    path: "/metrics"
    port: "127.0.0.1:0"
  beelzebub-cloud:
    enabled: false
    uri: ""
    auth-token: ""
EOF
{
  printf 'apiVersion: "v1"\nprotocol: "http"\naddress: "127.0.0.1:%s"\ndescription: "Docs"\ncommands:\n' "$bz_port"
  printf '  - regex: ".*"\n    handler: |\n'
  sed 's/^/      /' "$tmp/page.html"
  printf '\n    headers:\n      - "Content-Type: text/html; charset=utf-8"\n    statusCode: 200\n'
} >"$tmp/bz/services/http.yaml"
(cd "$tmp/bz" && exec "$BEELZEBUB" run -c "$tmp/bz/beelzebub.yaml" -s "$tmp/bz/services/" >"$tmp/bz/out.log" 2>&1) &
bz_pid=$!
for _ in $(seq 1 100); do curl -fs -o /dev/null "http://127.0.0.1:$bz_port/internal/docs" && break; sleep 0.1; done
curl -fs -o /dev/null "http://127.0.0.1:$bz_port/internal/docs" || { cat "$tmp/bz/out.log" >&2; die "Beelzebub does not answer"; }
bz_pid=$(pgrep -f -n "$BEELZEBUB run" || echo "$bz_pid") # the binary, not the subshell

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; } # the process's user + system CPU, in clock ticks
hz=$(getconf CLK_TCK)
answered=0
run() { # URL PID CONNS → "req/s p50 p99 non-2xx server-CPU-µs-per-request requests"
  local before after out
  before=$(cpu_ticks "$2")
  out=$(wrk -t"$(($3 < 2 ? 1 : 2))" -c"$3" -d"${secs}s" --latency "$1" |
    awk '/requests in/ {n=$1} /Requests\/sec/ {r=$2} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2} /Non-2xx/ {bad=$NF} END {print r, p50, p99, bad+0, n}')
  after=$(cpu_ticks "$2")
  read -r rps p50 p99 bad n <<<"$out"
  echo "$rps $p50 $p99 $bad $(echo "($after - $before) * 1000000 / $hz / ($rps * $secs)" | bc -l) $n"
}
echo "$name: page of $(wc -c <"$tmp/page.html") bytes, ${secs} s per run, $rounds rounds, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$name: cpu = the server process's CPU per request (µs); ratio = requests per second against bare in the same round"
printf '%-5s %-5s %9s %8s %6s | %9s %8s %6s %5s | %9s %8s %6s %5s\n' conns round bare p99 cpu beelzebub p99 cpu ratio flytrap p99 cpu ratio
for c in $conns_list; do
  for r in $(seq 1 "$rounds"); do
    read -r br _ bp99 _ bcpu _ < <(run "http://127.0.0.1:$bare_port/internal/docs" "$bare_pid" "$c")
    read -r zr _ zp99 zbad zcpu _ < <(run "http://127.0.0.1:$bz_port/internal/docs" "$bz_pid" "$c")
    read -r fr _ fp99 fbad fcpu fn < <(run "http://127.0.0.1:$trap_port/internal/docs" "$server_pid" "$c")
    [[ "$fbad" == 0 ]] || die "flytrap answered $fbad non-2xx responses (shed or failed writes)"
    [[ "$zbad" == 0 ]] || die "Beelzebub answered $zbad non-2xx responses"
    answered=$((answered + fn))
    printf '%-5s %-5s %9s %8s %6.1f | %9s %8s %6.1f %5.2f | %9s %8s %6.1f %5.2f\n' "$c" "$r" "$br" "$bp99" "$bcpu" \
      "$zr" "$zp99" "$zcpu" "$(echo "$zr / $br" | bc -l)" "$fr" "$fp99" "$fcpu" "$(echo "$fr / $br" | bc -l)"
  done
done
# Every answered request must be a stored hit; the journal applies the last ones within moments.
sleep 2
written=$(curl -fs -H "Authorization: Bearer $key" "http://127.0.0.1:$port/dashboard/api/analytics/overview" |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).data.totalHits24h))')
echo "$name: flytrap answered $answered requests 200 (wrk's count), hits recorded: $written"
((written >= answered)) || die "$((answered - written)) answered hits are not stored"
