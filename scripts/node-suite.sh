#!/usr/bin/env bash
# Runs one Node test suite (tests/<suite>/*.test.mjs) against a real flytrap binary: builds it,
# starts it on a fresh SQLite database and free local ports (extra arguments go to `flytrap serve`),
# reads the admin key it prints once, installs the suite's pinned npm packages (package-lock.json)
# and runs `node --test` with FLYTRAP_URL, FLYTRAP_TRAP_URL (the trap listener) and FLYTRAP_KEY set. Exits with the tests' status.
# Needs Go, Node >= 20.19 and npm with the npm registry reachable.
# NODE_TEST_TIMEOUT (ms, default 90000) bounds each test file.
# Usage: bash scripts/node-suite.sh SUITE [flytrap serve flags…]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

suite=${1:?usage: node-suite.sh SUITE [flytrap serve flags…]}
shift
name="node-suite[$suite]"
[[ -d "tests/$suite" ]] || { printf '%s: no tests/%s\n' "$name" "$suite" >&2; exit 1; }

tmp=$(mktemp -d)
# shellcheck source=lib/flytrap.sh
. scripts/lib/flytrap.sh
check_node "tests/$suite"
cleanup() {
  stop_server
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "$name: building flytrap"
go build -o "$tmp/flytrap" ./cmd/flytrap

read -r port trap_port < <(free_ports)
[[ -n "$port" && -n "$trap_port" ]] || die "could not find free ports"
url="http://127.0.0.1:${port}"

echo "$name: starting flytrap on ${url}"
start_flytrap --db "$tmp/flytrap.db" --api-addr "127.0.0.1:${port}" --trap-addr "127.0.0.1:${trap_port}" --log-format json "$@"
wait_for_key

ready() {
  node -e 'fetch(process.argv[1], { signal: AbortSignal.timeout(2000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$url/readyz"
}
up=""
for _ in $(seq 1 150); do
  if ready; then up=1; break; fi
  kill -0 "$server_pid" 2>/dev/null || fail_server "flytrap exited before it was ready"
  sleep 0.2
done
[[ -n "$up" ]] || fail_server "flytrap was not ready within 30 s"

echo "$name: installing tests/$suite (npm ci)"
npm ci --prefix "tests/$suite" --no-audit --no-fund --loglevel=error >/dev/null

echo "$name: node --test tests/$suite/*.test.mjs"
status=0
FLYTRAP_URL="$url" FLYTRAP_TRAP_URL="http://127.0.0.1:${trap_port}" FLYTRAP_KEY="$key" node --test --test-force-exit --test-timeout="${NODE_TEST_TIMEOUT:-90000}" "tests/$suite"/*.test.mjs || status=$?

stop_server
if [[ "$status" != 0 ]]; then
  printf '%s: FAILED (status %s); flytrap stderr (last 30 lines):\n' "$name" "$status" >&2
  tail -n 30 "$tmp/stderr" >&2 || true
fi
exit "$status"
