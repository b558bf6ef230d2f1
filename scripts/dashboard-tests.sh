#!/usr/bin/env bash
# End-to-end tests of the embedded dashboard (tests/dashboard): builds flytrap (with the
# committed web/dist embedded), starts a fake OpenID Connect provider (tests/dashboard/
# fake-idp.mjs), starts flytrap on a fresh SQLite database with free local ports for the API
# and trap listeners, validating that provider's JWTs and offering OIDC sign-in with it
# (--jwks-url, --jwt-issuer, --jwt-audience, --oidc-issuer, --oidc-client-id), reads the
# admin key and organization id it prints once, installs the pinned
# playwright-core (package-lock.json) and runs `node --test` driving Debian's Chromium
# (/usr/bin/chromium; bash scripts/install-chromium.sh installs it); a test that needs other
# server flags starts its own flytrap from FLYTRAP_BIN (olderhits.test.mjs). Screenshots of every
# view go to tests/dashboard/artifacts/ (or $ARTIFACTS_DIR). Exits with the tests' status.
# Run from anywhere: bash scripts/dashboard-tests.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

name=dashboard-tests
tmp=$(mktemp -d)
# shellcheck source=lib/flytrap.sh
. scripts/lib/flytrap.sh
check_node tests/dashboard
chromium_path=${CHROMIUM_PATH:-/usr/bin/chromium}
[[ -x "$chromium_path" ]] || die "$chromium_path is missing: run bash scripts/install-chromium.sh"

idp_pid=""
cleanup() {
  stop_server
  if [[ -n "$idp_pid" ]] && kill -0 "$idp_pid" 2>/dev/null; then
    kill -TERM "$idp_pid" 2>/dev/null || true
    wait "$idp_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "dashboard-tests: building flytrap"
go build -o "$tmp/flytrap" ./cmd/flytrap

# Two free ports: bind port 0 twice and report what the kernel chose.
read -r api_port trap_port < <(free_ports)
url="http://127.0.0.1:${api_port}"
trap_url="http://127.0.0.1:${trap_port}"

# The fake identity provider must answer before flytrap starts: flytrap fetches its JWKS at start.
oidc_client_id=flytrap-dashboard
oidc_audience=flytrap-api
FLYTRAP_URL="$url" FAKE_IDP_CLIENT_ID="$oidc_client_id" FAKE_IDP_AUDIENCE="$oidc_audience" \
  node tests/dashboard/fake-idp.mjs >"$tmp/idp.stdout" 2>"$tmp/idp.stderr" &
idp_pid=$!
idp_url=""
for _ in $(seq 1 100); do
  idp_url=$(sed -n 's/^{"issuer":"\(http:\/\/127\.0\.0\.1:[0-9]\{1,5\}\)"}$/\1/p' "$tmp/idp.stdout" | head -n 1)
  [[ -n "$idp_url" ]] && break
  kill -0 "$idp_pid" 2>/dev/null || { cat "$tmp/idp.stderr" >&2; die "the fake identity provider exited"; }
  sleep 0.1
done
[[ -n "$idp_url" ]] || die "the fake identity provider did not start within 10 s"
echo "dashboard-tests: fake identity provider at ${idp_url}"

echo "dashboard-tests: starting flytrap on ${url} (traps on ${trap_url})"
start_flytrap --db "$tmp/flytrap.db" --api-addr "127.0.0.1:${api_port}" --trap-addr "127.0.0.1:${trap_port}" \
  --jwks-url "${idp_url}/jwks" --jwt-issuer "$idp_url" --jwt-audience "$oidc_audience" \
  --oidc-issuer "$idp_url" --oidc-client-id "$oidc_client_id" \
  --webhook-allow-private \
  --trusted-proxies 127.0.0.1/32 --trap-ja4-header cf-ja4 \
  --log-format json
wait_for_key
# "Flytrap created organization org_… with an admin API key." — the org the IdP's tokens name.
org=$(sed -n 's/.*created organization \(org_[A-Za-z0-9]\{1,\}\).*/\1/p' "$tmp/stdout" | head -n 1)
[[ -n "$org" ]] || fail_server "flytrap printed no organization id"

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

echo "dashboard-tests: installing tests/dashboard (npm ci)"
npm ci --prefix tests/dashboard --no-audit --no-fund --loglevel=error >/dev/null

artifacts=${ARTIFACTS_DIR:-tests/dashboard/artifacts}
mkdir -p "$artifacts"
echo "dashboard-tests: node --test tests/dashboard/*.test.mjs (screenshots in ${artifacts})"
status=0
FLYTRAP_URL="$url" FLYTRAP_KEY="$key" FLYTRAP_ORG="$org" TRAP_URL="$trap_url" FLYTRAP_BIN="$tmp/flytrap" CHROMIUM_PATH="$chromium_path" ARTIFACTS_DIR="$(cd "$artifacts" && pwd)" \
  IDP_URL="$idp_url" OIDC_CLIENT_ID="$oidc_client_id" OIDC_AUDIENCE="$oidc_audience" \
  node --test --test-force-exit --test-timeout=180000 --test-concurrency=1 tests/dashboard/*.test.mjs || status=$?

stop_server
if [[ "$status" != 0 ]]; then
  printf 'dashboard-tests: FAILED (status %s); flytrap stderr (last 30 lines):\n' "$status" >&2
  tail -n 30 "$tmp/stderr" >&2 || true
fi
exit "$status"
