#!/usr/bin/env bash
# The committed dashboard build (web/dist, embedded in the binary) must be what the
# source builds to: installs the pinned packages (npm ci), runs the unit tests (Vitest)
# and the build (type check, then Vite), and fails if web/dist differs from the commit.
# Run from anywhere: bash scripts/dashboard-build-check.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

echo "dashboard-build-check: npm ci --prefix web"
npm ci --prefix web --no-audit --no-fund --loglevel=error >/dev/null
echo "dashboard-build-check: vitest"
npm test --prefix web --silent
echo "dashboard-build-check: npm run build --prefix web"
npm run build --prefix web --silent
changes=$(git status --porcelain --untracked-files=all -- web/dist)
if [[ -n "$changes" ]]; then
  printf '%s\n' "$changes" >&2
  git --no-pager diff --stat -- web/dist >&2 || true
  printf 'dashboard-build-check: web/dist is not what web/ builds to: run npm run build --prefix web and commit web/dist\n' >&2
  exit 1
fi
echo "dashboard-build-check: web/dist matches the source"
