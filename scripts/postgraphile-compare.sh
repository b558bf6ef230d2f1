#!/usr/bin/env bash
# Side by side: the sessions page from Flytrap's GraphQL and from PostGraphile 4 pointed at the
# same PostgreSQL database (docs/benchmarks-history.md, "Counters"), with wrk, same fields, same
# connections. Installs postgraphile@4 into a temporary directory (npm), needs wrk and a running
# Flytrap serving DB. Both pages: 50 sessions of ORG, last_seen descending.
# Usage: [FLYTRAP_PID=PID] bash scripts/postgraphile-compare.sh DB_URL ORG FLYTRAP_URL FLYTRAP_KEY [CONNECTIONS] [SECONDS]
set -euo pipefail
db=${1:?usage: postgraphile-compare.sh DB_URL ORG FLYTRAP_URL FLYTRAP_KEY [CONNECTIONS] [SECONDS]}
org=${2:?} flytrap=${3:?} key=${4:?} conns=${5:-8} secs=${6:-20}
tmp=$(mktemp -d)
pg_pid=
cleanup() { [[ -n $pg_pid ]] && kill "$pg_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
(cd "$tmp" && npm install --no-audit --no-fund --silent postgraphile@4 >/dev/null)
port=$((20000 + RANDOM % 10000))
"$tmp/node_modules/.bin/postgraphile" -c "$db" --port "$port" --host 127.0.0.1 --disable-query-log >"$tmp/pg.log" 2>&1 &
pg_pid=$!
for _ in $(seq 100); do curl -sf -o /dev/null -X POST -H 'Content-Type: application/json' -d '{"query":"{__typename}"}' "http://127.0.0.1:$port/graphql" && break; sleep 0.2; done
fields='id sourceIp userAgent classification score severity firstSeen lastSeen hitCount'
pgq=$(printf '{"query":"{ allSessions(first: 50, orderBy: LAST_SEEN_DESC, condition: {orgId: \\"%s\\"}) { nodes { %s } } }"}' "$org" "$fields")
ftq='{"query":"{ sessions(first: 50, orderBy: {field: LAST_SEEN, direction: DESC}) { edges { node { id sourceIP userAgent classification score severity firstSeen lastSeen hitCount } } } }"}'
lua() { # body [authorization]
  printf 'wrk.method = "POST"\nwrk.body = %s\nwrk.headers["Content-Type"] = "application/json"\n' "$(printf '%s' "$1" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')"
  [[ -n ${2:-} ]] && printf 'wrk.headers["Authorization"] = "Bearer %s"\n' "$2"
  # wrk counts non-2xx answers; a GraphQL error answers 200, so check one response by hand below.
  true
}
lua "$pgq" >"$tmp/pg.lua"
lua "$ftq" "$key" >"$tmp/ft.lua"
printf 'PostGraphile answer: %.120s…\n' "$(curl -s -X POST -H 'Content-Type: application/json' -d "$pgq" "http://127.0.0.1:$port/graphql")"
printf 'Flytrap answer:      %.120s…\n' "$(curl -s -X POST -H 'Content-Type: application/json' -H "Authorization: Bearer $key" -d "$ftq" "$flytrap/graphql")"
# With FLYTRAP_PID set (the serving process), each Flytrap round also prints that process's own CPU
# time per request (utime + stime from /proc), which the machine's other load disturbs far less than
# requests per second.
cpu() { awk '{print $14 + $15}' "/proc/$FLYTRAP_PID/stat"; }
for round in 1 2; do
  echo "== round $round: PostGraphile 4"
  wrk -t2 -c"$conns" -d"${secs}s" --latency -s "$tmp/pg.lua" "http://127.0.0.1:$port/graphql" | grep -E 'Requests/sec|50%|99%|Non-2xx'
  echo "== round $round: Flytrap"
  [[ -n ${FLYTRAP_PID:-} ]] && c0=$(cpu)
  out=$(wrk -t2 -c"$conns" -d"${secs}s" --latency -s "$tmp/ft.lua" "$flytrap/graphql")
  grep -E 'Requests/sec|50%|99%|Non-2xx' <<<"$out"
  if [[ -n ${FLYTRAP_PID:-} ]]; then
    n=$(awk '/requests in/ {print $1}' <<<"$out")
    awk -v c=$(($(cpu) - c0)) -v t="$(getconf CLK_TCK)" -v n="$n" 'BEGIN { printf "Flytrap CPU/request: %.0f µs\n", c / t * 1e6 / n }'
  fi
done
