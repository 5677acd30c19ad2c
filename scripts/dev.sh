#!/usr/bin/env bash
# The two entry points of the README:
#   bash scripts/dev.sh serve [jetmcp run args...]   build into .venv (release) and serve the demo app
#   bash scripts/dev.sh test                         build into .venv (fast profile) and run every check
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

cmd=${1:-}
shift || true
case "$cmd" in
  serve)
    setup_venv
    build release
    exec "$VENV/bin/jetmcp" run "$@"
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
    "$VENV/bin/ruff" check python tests bench
    "$VENV/bin/ruff" format --check python tests bench
    "$VENV/bin/mypy" --strict python/jetmcp
    echo "== the TypeScript SDK for the real-client tests (npm, pinned by its lockfile)"
    [ -d tests/clients/node_modules ] || \
      (cd tests/clients && npm ci --no-audit --no-fund --loglevel=error)
    echo "== the drop-in corpus and its second environment (pinned, into .cache/dropin)"
    bash scripts/dropin.sh
    echo "== pytest"
    "$VENV/bin/pytest" -p no:cacheprovider tests
    bash scripts/conformance.sh
    echo "== the SDK's everything-server, unchanged, under jetmcp: the conformance scenarios it passes on its SDK"
    bash scripts/dropin-conformance.sh
    ;;
  *)
    echo "usage: bash scripts/dev.sh serve|test" >&2
    exit 2
    ;;
esac
