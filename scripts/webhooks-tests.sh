#!/usr/bin/env bash
# Verifies Flytrap's webhook signatures with the Standard Webhooks reference library (npm
# `standardwebhooks`, tests/webhooks): builds flytrap, starts it on a fresh SQLite database and
# free local ports with --webhook-allow-private (the receiver is on loopback), reads the admin key
# it prints once, installs the pinned npm packages and runs `node --test`. Exits with the tests'
# status. Needs Go, Node >= 20.19 and npm with the npm registry reachable.
# Run from anywhere: bash scripts/webhooks-tests.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() { printf 'webhooks-tests: %s\n' "$*" >&2; exit 1; }

for tool in go node npm; do
  command -v "$tool" >/dev/null || die "$tool is not installed"
done
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' \
  || die "Node $(node --version) is too old: tests/webhooks needs >= 20.19"

tmp=$(mktemp -d)
server_pid=""
stop_server() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    local code=0
    wait "$server_pid" || code=$?
    [[ "$code" == 0 ]] || printf 'webhooks-tests: flytrap exited with status %s after SIGTERM\n' "$code" >&2
  fi
  server_pid=""
}
cleanup() {
  stop_server
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "webhooks-tests: building flytrap"
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

echo "webhooks-tests: starting flytrap on ${url}"
"$tmp/flytrap" serve --db "$tmp/flytrap.db" --api-addr "127.0.0.1:${port}" --trap-addr "127.0.0.1:${trap_port}" --log-format json --webhook-allow-private \
  >"$tmp/stdout" 2>"$tmp/stderr" &
server_pid=$!

fail_server() {
  printf 'webhooks-tests: %s\n--- flytrap stdout ---\n' "$*" >&2
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

echo "webhooks-tests: installing tests/webhooks (npm ci)"
npm ci --prefix tests/webhooks --no-audit --no-fund --loglevel=error >/dev/null

echo "webhooks-tests: node --test tests/webhooks/*.test.mjs"
status=0
FLYTRAP_URL="$url" FLYTRAP_KEY="$key" node --test --test-force-exit --test-timeout=60000 tests/webhooks/*.test.mjs || status=$?

stop_server
if [[ "$status" != 0 ]]; then
  printf 'webhooks-tests: FAILED (status %s); flytrap stderr (last 30 lines):\n' "$status" >&2
  tail -n 30 "$tmp/stderr" >&2 || true
fi
exit "$status"
