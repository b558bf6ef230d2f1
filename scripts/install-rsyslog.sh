#!/usr/bin/env bash
# Installs what the syslog delivery test (TestSyslogIntoRsyslog in webhook/) needs: Debian's
# rsyslog and its GnuTLS driver (rsyslog-gnutls), only when they are missing. The test runs
# rsyslogd in the foreground with its own configuration on a free port; the package's own
# service is not needed (nor started: there is no systemd).
# Non-interactive and quiet; needs root (or sudo) for apt-get. Run from anywhere: bash scripts/install-rsyslog.sh
set -euo pipefail

die() { printf 'install-rsyslog: %s\n' "$*" >&2; exit 1; }

have_rsyslogd() { command -v rsyslogd >/dev/null || [[ -x /usr/sbin/rsyslogd ]]; }
have_gtls() { compgen -G '/usr/lib/*/rsyslog/lmnsd_gtls.so' >/dev/null || [[ -e /usr/lib/rsyslog/lmnsd_gtls.so ]]; }

missing=()
have_rsyslogd || missing+=(rsyslog)
have_gtls || missing+=(rsyslog-gnutls)

if ((${#missing[@]})); then
  command -v apt-get >/dev/null || die "${missing[*]} missing and apt-get is not available: install them by hand"
  sudo=""
  if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null || die "${missing[*]} missing and installing needs root (no sudo found)"
    sudo="sudo"
  fi
  echo "install-rsyslog: installing ${missing[*]} with apt-get"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
have_rsyslogd || die "apt-get finished but rsyslogd is still missing"
have_gtls || die "apt-get finished but rsyslog's gtls driver is still missing"
echo "install-rsyslog: $( (rsyslogd -v || /usr/sbin/rsyslogd -v) 2>&1 | head -1)"
