#!/usr/bin/env bash
# The trap listener over HTTPS against itself over plain HTTP (issue 25: "at least 0.8× its
# plain-HTTP requests per second on resumed connections"). One flytrap on a fresh SQLite
# database (or --db …) with a certificate of its own (ECDSA P-256, made here with openssl) on
# its trap address and --trap-http-addr serving every host over plain HTTP too, so both
# schemes reach the same process, database and trap. wrk alternates between them, ROUNDS
# times: a page trap (every answer a recorded hit) and a path of no trap (the bland 404,
# nothing recorded: the TLS share of the work at its largest), on kept-alive connections
# (one handshake per connection), then with a new connection per request (a full handshake
# each). Prints requests per second, p99 and the server's CPU per request.
# Needs wrk (apt-get install -y wrk), openssl, Go and Node (free ports).
# Usage: bash scripts/listener-tls.sh [CONNECTIONS=32] [SECONDS=8] [ROUNDS=3] [-- serve flags…]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
name=listener-tls
conns=${1:-32}
secs=${2:-8}
rounds=${3:-3}
shift $(($# < 3 ? $# : 3))
[[ "${1:-}" == "--" ]] && shift

tmp=$(mktemp -d)
# shellcheck source=lib/flytrap.sh
. scripts/lib/flytrap.sh
command -v wrk >/dev/null || die "wrk is missing: apt-get install -y wrk"
command -v openssl >/dev/null || die "openssl is missing"
cleanup() {
  stop_server
  rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/flytrap" ./cmd/flytrap
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
  -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null
read -r port tls_port < <(free_ports)
read -r http_port _ < <(free_ports)
db=(--db "$tmp/flytrap.db")
[[ " $* " == *" --db "* ]] && db=()
start_flytrap "${db[@]}" --api-addr "127.0.0.1:$port" --trap-addr "127.0.0.1:$tls_port" \
  --trap-tls-cert "$tmp/cert.pem" --trap-tls-key "$tmp/key.pem" \
  --trap-http-addr "127.0.0.1:$http_port" --trap-http-serve '*' \
  --rate-limit 100000000 --rate-burst 100000000 --log-format json "$@"
wait_for_key
for _ in $(seq 1 100); do curl -fs -o /dev/null "http://127.0.0.1:$port/readyz" && break; sleep 0.1; done
curl -fs -o /dev/null -X POST -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
  -d '{"name":"Docs","type":"page","path":"/internal/docs"}' "http://127.0.0.1:$port/dashboard/api/traps" ||
  die "could not create the trap"
curl -fsk -o /dev/null "https://127.0.0.1:$tls_port/internal/docs" || die "the trap does not answer over HTTPS"
curl -fs -o /dev/null "http://127.0.0.1:$http_port/internal/docs" || die "the trap does not answer over HTTP"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
run() { # URL [wrk flags…] → "req/s p99 server-CPU-µs-per-request"
  local url=$1 before after out
  shift
  before=$(cpu_ticks "$server_pid")
  out=$(wrk -t"$((conns < 2 ? 1 : 2))" -c"$conns" -d"${secs}s" --latency "$@" "$url" |
    awk '/Requests\/sec/ {r=$2} /^ +99%/ {p99=$2} END {print r, p99}')
  after=$(cpu_ticks "$server_pid")
  read -r rps p99 <<<"$out"
  echo "$rps $p99 $(echo "($after - $before) * 1000000 / $hz / ($rps * $secs)" | bc -l)"
}
echo "$name: $conns connections, ${secs} s per run, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-34s %5s %10s %8s %7s %10s %8s %7s %6s\n' case round http p99 cpu https p99 cpu ratio
for what in "page trap|/internal/docs|" "no trap (404)|/nothing-here|" \
  "page trap, new connection each|/internal/docs|close"; do
  IFS='|' read -r label path close <<<"$what"
  flags=()
  [[ -n "$close" ]] && flags=(-H "Connection: close")
  for r in $(seq 1 "$rounds"); do
    read -r hr hp hc <<<"$(run "http://127.0.0.1:$http_port$path" "${flags[@]}")"
    read -r sr sp sc <<<"$(run "https://127.0.0.1:$tls_port$path" "${flags[@]}")"
    printf '%-34s %5s %10.0f %8s %7.1f %10.0f %8s %7.1f %6.2f\n' "$label" "$r" "$hr" "$hp" "$hc" "$sr" "$sp" "$sc" \
      "$(echo "$sr / $hr" | bc -l)"
  done
done
