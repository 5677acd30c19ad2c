#!/usr/bin/env bash
# The two entry points of the README (its Contributing section):
#   bash scripts/dev.sh serve [jetmcp run args...]   build into .venv (release) and serve the demo app over HTTP
#   bash scripts/dev.sh test                         build into .venv (fast profile) and run every check
# and, for packaging:
#   bash scripts/dev.sh wheel                        a release wheel in dist/, manylinux2014 (see
#                                                    docs/packaging.md)
# Both create .venv/ on first use and install what they need; nothing else is assumed
# beyond Debian with Rust, Python 3.11 and pip.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=$ROOT/.venv
PY=$VENV/bin/python

setup_venv() {
  if [ ! -x "$PY" ]; then
    python3 -m venv "$VENV"
  fi
  # Pinned versions of every Python dependency, tested together.
  "$PY" -m pip install -q --disable-pip-version-check -r requirements/dev.txt
}

build() {  # $1 = cargo profile for maturin (release | ci)
  local flag=(--profile "$1")
  [ "$1" = release ] && flag=(--release)
  VIRTUAL_ENV=$VENV "$VENV/bin/maturin" develop -q "${flag[@]}"
  test -x "$VENV/bin/jetmcp"
}

# Build a wheel with the ci profile (the artifacts `build ci` left, so it costs seconds), install
# it with pinned dependencies into a fresh venv under $TMPDIR, and smoke-test it from there.
wheel_smoke() {
  local tmp
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/jetmcp-wheel.XXXXXX")
  VIRTUAL_ENV=$VENV "$VENV/bin/maturin" build -q --profile ci -i "$PY" -o "$tmp/dist"
  # No pip of its own: the project's pip installs into it (--python), which saves seconds.
  "$VENV/bin/python" -m venv --without-pip "$tmp/venv"
  "$VENV/bin/pip" --python "$tmp/venv/bin/python" install -q --disable-pip-version-check \
    -c requirements/dev.txt "$tmp"/dist/jetmcp-*.whl
  (cd "$tmp" && env -u PYTHONPATH -u VIRTUAL_ENV "$tmp/venv/bin/python" -I \
    "$ROOT/scripts/smoke_wheel.py" "$ROOT/pyproject.toml")
  rm -rf "$tmp"
}

# The Redis the tests of the shared state use (JETMCP_TEST_REDIS_URL, else 127.0.0.1:6379 db 0;
# they keep to key prefixes of their own). When nothing answers there, start a redis-server
# (installed with apt-get when missing) that keeps nothing on disk, and stop it on exit.
REDIS_STARTED=
# The HTML report test of `jetmcp bench` screenshots the page with Debian's headless Chromium.
ensure_chromium() {
  if ! command -v chromium >/dev/null; then
    echo "== installing chromium (apt-get)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
}

ensure_redis() {
  local url=${JETMCP_TEST_REDIS_URL:-redis://127.0.0.1:6379/0}
  local hostport=${url#*://}
  hostport=${hostport%%/*}
  local host=${hostport%%:*} port=${hostport##*:}
  [ "$port" = "$hostport" ] && port=6379
  if "$PY" -c "import socket,sys; socket.create_connection(('$host', $port), 2).close()" 2>/dev/null; then
    return
  fi
  if ! command -v redis-server >/dev/null; then
    echo "== installing redis-server (apt-get)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  fi
  echo "== starting redis-server on $host:$port for the tests"
  redis-server --bind "$host" --port "$port" --save '' --appendonly no --daemonize no \
    --dir "${TMPDIR:-/tmp}" >/dev/null &
  REDIS_STARTED=$!
  trap 'kill "$REDIS_STARTED" 2>/dev/null || true' EXIT
  for _ in $(seq 50); do
    "$PY" -c "import socket; socket.create_connection(('$host', $port), 1).close()" 2>/dev/null && return
    sleep 0.1
  done
  echo "redis-server did not come up on $host:$port" >&2
  exit 1
}

cmd=${1:-}
shift || true
case "$cmd" in
  serve)
    setup_venv
    build release
    exec "$VENV/bin/jetmcp" run --transport http "$@"
    ;;
  test)
    setup_venv
    echo "== rust: fmt, clippy, tests"
    cargo fmt --check
    cargo clippy -q --all-targets --no-default-features -- -D warnings
    cargo clippy -q --all-targets -- -D warnings
    cargo test -q --no-default-features
    echo "== build the extension (profile ci)"
    build ci
    echo "== python: ruff, mypy"
    "$VENV/bin/ruff" check python tests bench examples scripts
    "$VENV/bin/ruff" format --check python tests bench examples scripts
    "$VENV/bin/mypy" --strict python/jetmcp
    echo "== layout: the import layers (import-linter), no import cycle, file-size caps"
    "$VENV/bin/lint-imports"
    "$PY" scripts/check_layout.py
    echo "== the wheel, installed into a fresh venv outside the tree"
    wheel_smoke
    echo "== the documentation site (warnings are errors)"
    site=$(mktemp -d "${TMPDIR:-/tmp}/jetmcp-site.XXXXXX")
    # Not --quiet: it hides the warnings that --strict counts, and the build then passes.
    NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict --site-dir "$site"
    rm -rf "$site"
    echo "== the TypeScript SDK and the MCP Inspector for the real-client tests (npm, pinned by its lockfile)"
    [ -x tests/clients/node_modules/.bin/mcp-inspector ] || \
      (cd tests/clients && npm ci --no-audit --no-fund --loglevel=error)
    echo "== the drop-in corpus and its second environment (pinned, into .cache/dropin)"
    bash scripts/dropin.sh
    ensure_redis
    ensure_chromium
    echo "== pytest"
    "$VENV/bin/pytest" -p no:cacheprovider tests
    echo "== the conformance suite on the native HTTP engine (the default)"
    bash scripts/conformance.sh
    echo "== the conformance suite (--suite all) against two hosts sharing Redis, round robin"
    bash scripts/conformance.sh --redis
    echo "== the same two on Granian (--server granian)"
    bash scripts/conformance.sh --server granian
    bash scripts/conformance.sh --redis --server granian
    echo "== the SDK's everything-server, unchanged, under jetmcp: the conformance scenarios it passes on its SDK"
    bash scripts/dropin-conformance.sh
    ;;
  wheel)
    setup_venv
    # zig links against an old glibc, so the wheel installs on any manylinux2014 system.
    "$PY" -m pip install -q --disable-pip-version-check ziglang==0.17.1
    PATH=$VENV/bin:$PATH VIRTUAL_ENV=$VENV "$VENV/bin/maturin" build --release --zig \
      --compatibility manylinux2014 -i "$PY" -o dist "$@"
    ;;
  *)
    echo "usage: bash scripts/dev.sh serve|test|wheel" >&2
    exit 2
    ;;
esac
