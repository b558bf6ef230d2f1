#!/usr/bin/env bash
# Runs one Node test suite (tests/<suite>/*.test.mjs) against a real flytrap binary: builds it,
# starts it on a fresh SQLite database and free local ports (extra arguments go to `flytrap serve`),
# reads the admin key it prints once, installs the suite's pinned npm packages (package-lock.json)
# and runs `node --test` with FLYTRAP_URL and FLYTRAP_KEY set. Exits with the tests' status.
# Needs Go, Node >= 20.19 and npm with the npm registry reachable.
# Usage: bash scripts/node-suite.sh SUITE [flytrap serve flags…]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

suite=${1:?usage: node-suite.sh SUITE [flytrap serve flags…]}
shift
name="node-suite[$suite]"
[[ -d "tests/$suite" ]] || { printf '%s: no tests/%s\n' "$name" "$suite" >&2; exit 1; }

die() { printf '%s: %s\n' "$name" "$*" >&2; exit 1; }
for tool in go node npm; do
  command -v "$tool" >/dev/null || die "$tool is not installed"
done
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' \
  || die "Node $(node --version) is too old: tests/$suite needs >= 20.19"

tmp=$(mktemp -d)
server_pid=""
stop_server() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    local code=0
    wait "$server_pid" || code=$?
    [[ "$code" == 0 ]] || printf '%s: flytrap exited with status %s after SIGTERM\n' "$name" "$code" >&2
  fi
  server_pid=""
}
cleanup() {
  stop_server
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "$name: building flytrap"
go build -o "$tmp/flytrap" ./cmd/flytrap

# Two free ports (API and trap listeners): bind port 0 twice at once and report what the kernel chose.
read -r port trap_port < <(node -e '
  const net = require("net");
  const a = net.createServer().listen(0, "127.0.0.1", () => {
    const b = net.createServer().listen(0, "127.0.0.1", () => {
      console.log(a.address().port, b.address().port);
      a.close(); b.close();
    });
  });')
[[ -n "$port" && -n "$trap_port" ]] || die "could not find free ports"
url="http://127.0.0.1:${port}"

echo "$name: starting flytrap on ${url}"
"$tmp/flytrap" serve --db "$tmp/flytrap.db" --api-addr "127.0.0.1:${port}" --trap-addr "127.0.0.1:${trap_port}" --log-format json "$@" \
  >"$tmp/stdout" 2>"$tmp/stderr" &
server_pid=$!

fail_server() {
  printf '%s: %s\n--- flytrap stdout ---\n' "$name" "$*" >&2
  cat "$tmp/stdout" >&2 || true
  printf -- '--- flytrap stderr (last 50 lines) ---\n' >&2
  tail -n 50 "$tmp/stderr" >&2 || true
  exit 1
}

# The admin key of the new organization is printed once, alone on an indented banner line.
key=""
for _ in $(seq 1 300); do
  key=$(sed -n 's/^[[:space:]]\{1,\}\(ftk_[A-Za-z0-9_]\{1,\}\)[[:space:]]*$/\1/p' "$tmp/stdout" | head -n 1)
  [[ -n "$key" ]] && break
  kill -0 "$server_pid" 2>/dev/null || fail_server "flytrap exited before printing its admin key"
  sleep 0.1
done
[[ -n "$key" ]] || fail_server "flytrap printed no admin key within 30 s"

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
FLYTRAP_URL="$url" FLYTRAP_KEY="$key" node --test --test-force-exit --test-timeout=90000 "tests/$suite"/*.test.mjs || status=$?

stop_server
if [[ "$status" != 0 ]]; then
  printf '%s: FAILED (status %s); flytrap stderr (last 30 lines):\n' "$name" "$status" >&2
  tail -n 30 "$tmp/stderr" >&2 || true
fi
exit "$status"
