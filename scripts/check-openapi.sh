#!/usr/bin/env bash
# Validates rest/openapi.json, the OpenAPI 3.1 document served at /api/openapi.json, with
# Redocly CLI from the npm registry (pinned in tests/node/package-lock.json), under the
# recommended-strict rules in tests/node/redocly.yaml: structure of every object against
# OpenAPI 3.1 (schemas as JSON Schema 2020-12), resolvable $refs, no unused components,
# and the rest; any finding fails. Needs Node >= 20.19 and npm. Run from anywhere:
# bash scripts/check-openapi.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

command -v npm >/dev/null || { echo "check-openapi: npm is not installed" >&2; exit 1; }

npm ci --prefix tests/node --no-audit --no-fund --loglevel=error >/dev/null

# No telemetry, no update check: CI runs offline from everything but the npm registry.
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true
tests/node/node_modules/.bin/redocly lint --config tests/node/redocly.yaml --format stylish rest/openapi.json
