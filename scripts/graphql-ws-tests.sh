#!/usr/bin/env bash
# Runs the JavaScript GraphQL-over-WebSocket tests in tests/graphql-ws (the real npm
# `graphql-ws` client on the graphql-transport-ws protocol, and a raw `ws` client on the
# legacy graphql-ws protocol, against the events subscription) with a real flytrap binary:
# builds it, starts it on a fresh SQLite database and free local ports, reads the admin
# key it prints once, installs the pinned npm packages (package-lock.json) and runs
# `node --test`. Exits with the tests' status. Needs Go, Node >= 20.19 and npm with the
# npm registry reachable. Run from anywhere: bash scripts/graphql-ws-tests.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() { printf 'graphql-ws-tests: %s\n' "$*" >&2; exit 1; }

for tool in go node npm; do
  command -v "$tool" >/dev/null || die "$tool is not installed"
done
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' \
  || die "Node $(node --version) is too old: tests/graphql-ws needs >= 20.19"

tmp=$(mktemp -d)
server_pid=""
stop_server() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    local code=0
    wait "$server_pid" || code=$?
    [[ "$code" == 0 ]] || printf 'graphql-ws-tests: flytrap exited with status %s after SIGTERM\n' "$code" >&2
  fi
  server_pid=""
}
cleanup() {
  stop_server
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "graphql-ws-tests: building flytrap"
go build -o "$tmp/flytrap" ./cmd/flytrap

# A free port: bind port 0 and report what the kernel chose.
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

echo "graphql-ws-tests: starting flytrap on ${url}"
"$tmp/flytrap" serve --db "$tmp/flytrap.db" --api-addr "127.0.0.1:${port}" --trap-addr "127.0.0.1:${trap_port}" --log-format json \
  >"$tmp/stdout" 2>"$tmp/stderr" &
server_pid=$!

fail_server() {
  printf 'graphql-ws-tests: %s\n--- flytrap stdout ---\n' "$*" >&2
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

echo "graphql-ws-tests: installing tests/graphql-ws (npm ci)"
npm ci --prefix tests/graphql-ws --no-audit --no-fund --loglevel=error >/dev/null

echo "graphql-ws-tests: node --test tests/graphql-ws/*.test.mjs"
status=0
FLYTRAP_URL="$url" FLYTRAP_KEY="$key" node --test --test-force-exit --test-timeout=60000 tests/graphql-ws/*.test.mjs || status=$?

stop_server
if [[ "$status" != 0 ]]; then
  printf 'graphql-ws-tests: FAILED (status %s); flytrap stderr (last 30 lines):\n' "$status" >&2
  tail -n 30 "$tmp/stderr" >&2 || true
fi
exit "$status"
