# Shared by the scripts that run a real flytrap for a Node test suite (node-suite.sh,
# dashboard-tests.sh): source it after setting `name` (the prefix of messages) and `tmp`
# (a scratch directory the caller removes). It defines die, check_node, free_ports,
# start_flytrap, stop_server, fail_server, wait_for_key and start_page_trap.

server_pid=""

die() { printf '%s: %s\n' "$name" "$*" >&2; exit 1; }

# check_node WHAT: go, node and npm are installed, and Node is at least 20.19.
check_node() {
  local tool
  for tool in go node npm; do
    command -v "$tool" >/dev/null || die "$tool is not installed"
  done
  node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' \
    || die "Node $(node --version) is too old: $1 needs >= 20.19"
}

# free_ports: two free local ports (API and trap listeners), bound at once so they differ.
free_ports() {
  node -e '
    const net = require("net");
    const a = net.createServer().listen(0, "127.0.0.1", () => {
      const b = net.createServer().listen(0, "127.0.0.1", () => {
        console.log(a.address().port, b.address().port);
        a.close(); b.close();
      });
    });'
}

# start_flytrap ARGS…: runs "$tmp/flytrap serve ARGS…" in the background, its output in $tmp.
start_flytrap() {
  "$tmp/flytrap" serve "$@" >"$tmp/stdout" 2>"$tmp/stderr" &
  server_pid=$!
}

stop_server() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    local code=0
    wait "$server_pid" || code=$?
    [[ "$code" == 0 ]] || printf '%s: flytrap exited with status %s after SIGTERM\n' "$name" "$code" >&2
  fi
  server_pid=""
}

fail_server() {
  printf '%s: %s\n--- flytrap stdout ---\n' "$name" "$*" >&2
  cat "$tmp/stdout" >&2 || true
  printf -- '--- flytrap stderr (last 50 lines) ---\n' >&2
  tail -n 50 "$tmp/stderr" >&2 || true
  exit 1
}

# wait_for_key: sets key to the admin key flytrap prints once, alone on an indented banner line.
wait_for_key() {
  key=""
  for _ in $(seq 1 300); do
    key=$(sed -n 's/^[[:space:]]\{1,\}\(ftk_[A-Za-z0-9_]\{1,\}\)[[:space:]]*$/\1/p' "$tmp/stdout" | head -n 1)
    [[ -n "$key" ]] && return 0
    kill -0 "$server_pid" 2>/dev/null || fail_server "flytrap exited before printing its admin key"
    sleep 0.1
  done
  fail_server "flytrap printed no admin key within 30 s"
}

# start_page_trap SERVE-ARGS…: for the listener benchmarks (listener-wrk.sh,
# listener-vs-beelzebub.sh). Builds flytrap and internal/bareserve into $tmp, starts flytrap
# on a fresh SQLite database in $tmp (unless the arguments name --db) with its limits off,
# creates a page trap at /internal/docs, saves one of its responses as $tmp/page.html and
# starts the bare server writing those bytes. Sets port, trap_port, bare_port, key and bare_pid.
start_page_trap() {
  go build -o "$tmp/flytrap" ./cmd/flytrap
  go build -o "$tmp/bareserve" ./internal/bareserve
  read -r port trap_port < <(free_ports)
  read -r bare_port _ < <(free_ports)
  local db=(--db "$tmp/flytrap.db")
  [[ " $* " == *" --db "* ]] && db=()
  start_flytrap "${db[@]}" --api-addr "127.0.0.1:$port" --trap-addr "127.0.0.1:$trap_port" \
    --rate-limit 100000000 --rate-burst 100000000 --log-format json "$@"
  wait_for_key
  for _ in $(seq 1 100); do curl -fs -o /dev/null "http://127.0.0.1:$port/readyz" && break; sleep 0.1; done
  curl -fs -o /dev/null -X POST -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    -d '{"name":"Docs","type":"page","path":"/internal/docs"}' "http://127.0.0.1:$port/dashboard/api/traps" ||
    die "could not create the trap"
  curl -fs -o "$tmp/page.html" "http://127.0.0.1:$trap_port/internal/docs" || die "the trap does not answer"
  "$tmp/bareserve" -addr "127.0.0.1:$bare_port" -file "$tmp/page.html" &
  bare_pid=$!
}
