#!/usr/bin/env bash
# PostgreSQL for CI and `make test-postgres`: starts the newest local cluster if nothing
# answers on 127.0.0.1:5432, then makes a fresh, empty test database (default flytrap_ci,
# dropped first). The tests take it as FLYTRAP_TEST_POSTGRES_URL and create their own
# databases next to it.
#
#   TEST_DB   the database to recreate (default flytrap_ci)
set -euo pipefail

PGHOST_CI=127.0.0.1
PGPORT_CI=5432
TEST_DB=${TEST_DB:-flytrap_ci}

fail() { printf '\nFAILED: %s\n' "$*" >&2; exit 1; }

if ! pg_isready -q -h "$PGHOST_CI" -p "$PGPORT_CI"; then
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  [[ -n "$version" ]] || fail "no PostgreSQL cluster under /etc/postgresql"
  echo "not running; starting cluster ${version}/main"
  pg_ctlcluster --skip-systemctl-redirect "$version" main start
  for _ in $(seq 1 60); do
    pg_isready -q -h "$PGHOST_CI" -p "$PGPORT_CI" && break
    sleep 0.5
  done
fi
pg_isready -h "$PGHOST_CI" -p "$PGPORT_CI" || fail "PostgreSQL is not accepting connections"

echo "fresh test database ${TEST_DB}"
PGOPTIONS='--client-min-messages=warning' psql -X -q -v ON_ERROR_STOP=1 -h "$PGHOST_CI" -p "$PGPORT_CI" -U postgres -d postgres \
  -c "DROP DATABASE IF EXISTS ${TEST_DB} WITH (FORCE)" \
  -c "CREATE DATABASE ${TEST_DB}"
