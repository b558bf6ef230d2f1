#!/usr/bin/env bash
# Runs every fuzz target of the module (func FuzzXxx in any package, found with
# `go test -list`, so targets added later are included) for a bounded time each, and
# fails on any finding. A finding is written under that package's testdata/fuzz/; keep
# it there as a seed once fixed (see docs/security-fuzz.md).
#
#   FUZZTIME   time per target (default 10s; any -fuzztime value, e.g. 2m or 5000x)
#   FUZZMINIMIZETIME  time spent shrinking a new interesting input (default 2s; go's default
#              of 60s stalls a short run)
#   FUZZ_PACKAGES  packages to look in (default ./...)
#   FUZZ_MATCH     a regexp the target names must match (default ^Fuzz)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

fuzztime=${FUZZTIME:-10s}
minimize=${FUZZMINIMIZETIME:-2s}
match=${FUZZ_MATCH:-^Fuzz}
read -r -a pkgs <<<"${FUZZ_PACKAGES:-./...}"

# Packages whose test files declare a func Fuzz…, then each one's targets as go test
# lists them (compiling only those packages' tests keeps discovery to seconds).
mapfile -t candidates < <(go list -f '{{$d := .Dir}}{{range .TestGoFiles}}{{$d}}/{{.}} {{end}}{{range .XTestGoFiles}}{{$d}}/{{.}} {{end}}|{{.ImportPath}}' "${pkgs[@]}" |
  while IFS='|' read -r files pkg; do
    [[ -n "$files" ]] && grep -qE '^func Fuzz' $files && echo "$pkg"
  done)
targets=()
for pkg in "${candidates[@]}"; do
  [[ -n "$pkg" ]] || continue
  # `go test -list` prints the matching names, then "ok <pkg> <time>"; only the names start with Fuzz.
  while read -r name; do
    [[ "$name" =~ ^Fuzz[A-Za-z0-9_]*$ && "$name" =~ $match ]] && targets+=("$pkg $name")
  done < <(go test -list '^Fuzz' "$pkg")
done
if ((${#targets[@]} == 0)); then
  echo "no fuzz targets found in ${pkgs[*]}" >&2
  exit 1
fi
echo "${#targets[@]} fuzz targets, ${fuzztime} each"

failed=()
for t in "${targets[@]}"; do
  read -r pkg name <<<"$t"
  printf '\n--- %s %s\n' "$pkg" "$name"
  # One package and one target per run: go test -fuzz accepts no more. Go's fuzzer sometimes
  # fails a run with "context deadline exceeded" when -fuzztime ends while it is still handling a
  # new input, writing no failing input: that is the engine's timing, not a finding, so such a run
  # is tried once more. A finding always writes its input ("Failing input written to …").
  for attempt in 1 2; do
    out=$(go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" 2>&1) && status=0 || status=$?
    printf '%s\n' "$out" | tail -n 25
    if ((status == 0)); then
      break
    fi
    if ((attempt == 1)) && ! grep -q 'Failing input written to' <<<"$out" && grep -q 'context deadline exceeded' <<<"$out"; then
      echo "(the fuzzer stopped on its own deadline without a finding; running ${name} once more)"
      continue
    fi
    failed+=("$pkg $name")
    break
  done
done

if ((${#failed[@]} > 0)); then
  printf '\nfuzzing found something in:\n' >&2
  printf '  %s\n' "${failed[@]}" >&2
  echo "the failing inputs are under each package's testdata/fuzz/; re-run one with: go test <pkg> -run '<Target>/<file>'" >&2
  exit 1
fi
printf '\nall %d fuzz targets ran %s without a finding\n' "${#targets[@]}" "$fuzztime"
