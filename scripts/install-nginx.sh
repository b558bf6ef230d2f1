#!/usr/bin/env bash
# Installs what the deployment guide's tests (TestNginxBesideApp, TestCaddyBesideApp in
# server/deploy_test.go) need: Debian's nginx-light and caddy, only when they are missing.
# The tests run them as the current user under a temporary prefix; the packages' own
# services are not needed (nor started where policy-rc.d forbids it).
# Non-interactive and quiet; needs root (or sudo) for apt-get. Run from anywhere: bash scripts/install-nginx.sh
set -euo pipefail

die() { printf 'install-nginx: %s\n' "$*" >&2; exit 1; }

have() { command -v "$1" >/dev/null || [[ -x "/usr/sbin/$1" ]]; }

missing=()
have nginx || missing+=(nginx-light)
have caddy || missing+=(caddy)

if ((${#missing[@]})); then
  command -v apt-get >/dev/null || die "${missing[*]} missing and apt-get is not available: install them by hand"
  sudo=""
  if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null || die "${missing[*]} missing and installing needs root (no sudo found)"
    sudo="sudo"
  fi
  echo "install-nginx: installing ${missing[*]} with apt-get"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
have nginx || die "apt-get finished but nginx is still missing"
have caddy || die "apt-get finished but caddy is still missing"
echo "install-nginx: $( (nginx -v || /usr/sbin/nginx -v) 2>&1 ), caddy $(caddy version 2>/dev/null | cut -d' ' -f1)"
