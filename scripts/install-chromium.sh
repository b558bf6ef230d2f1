#!/usr/bin/env bash
# Installs what the real-browser test (tests/browser, run by TestBrowserPerson in
# trap/corpus_test.go) needs: Debian's chromium at /usr/bin/chromium, only when it is
# missing, and the pinned npm packages of tests/browser (package-lock.json, npm ci).
# Non-interactive and quiet; needs root (or sudo) for apt-get when Chromium is missing.
# Run from anywhere: bash scripts/install-chromium.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() { printf 'install-chromium: %s\n' "$*" >&2; exit 1; }

if [[ -x /usr/bin/chromium ]]; then
  echo "install-chromium: /usr/bin/chromium is present ($(/usr/bin/chromium --version 2>/dev/null || echo 'version unknown'))"
else
  command -v apt-get >/dev/null || die "/usr/bin/chromium is missing and apt-get is not available: install Chromium by hand"
  sudo=""
  if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null || die "/usr/bin/chromium is missing and installing it needs root (no sudo found)"
    sudo="sudo"
  fi
  echo "install-chromium: installing chromium with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  [[ -x /usr/bin/chromium ]] || die "apt-get finished but /usr/bin/chromium is still missing"
  echo "install-chromium: $(/usr/bin/chromium --version 2>/dev/null || echo 'chromium installed')"
fi

command -v npm >/dev/null || die "npm is not installed"
echo "install-chromium: npm ci --prefix tests/browser"
npm ci --prefix tests/browser --no-audit --no-fund --loglevel=error >/dev/null
