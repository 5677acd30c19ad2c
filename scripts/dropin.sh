#!/usr/bin/env bash
# Sets up what tests/compat/dropin needs, pinned, under .cache/dropin/ (nothing third-party is
# committed: the corpus is downloaded from PyPI at test time):
#   - the official SDK's and fastmcp's example servers, from their sdists (with licences);
#   - .venv gets requirements/dropin-v2.txt (fastmcp 4.x and published servers on mcp 2.x);
#   - .cache/dropin/v1 is a second environment with requirements/dropin-v1.txt (mcp 1.30.0,
#     fastmcp 2.14.7, published servers on mcp 1.x) and this checkout's jetmcp on its path
#     (the extension built for .venv: same interpreter);
#   - .cache/dropin/mcp-1.2.0 and mcp-1.6.0: old official SDKs (requirements/dropin-mcp-*.txt),
#     with this checkout's jetmcp on their path too.
# Idempotent: each step is skipped when its result is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=$ROOT/.cache/dropin
PY=$ROOT/.venv/bin/python
PIP=("$PY" -m pip install -q --disable-pip-version-check)
mkdir -p "$CACHE/sdist" "$CACHE/src"

for pkg in mcp==1.30.0 mcp==2.3.0 fastmcp==2.14.7 fastmcp==4.2.3; do
  name=${pkg%%==*}
  version=${pkg##*==}
  dir=$CACHE/src/$name-$version
  [ -d "$dir/examples" ] && continue
  "$PY" -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
    "$pkg" -d "$CACHE/sdist"
  tar xzf "$CACHE/sdist/$name-$version.tar.gz" -C "$CACHE/src" \
    "$name-$version/examples" "$name-$version/LICENSE"
done

stamp=$CACHE/v2.requirements
if ! cmp -s requirements/dropin-v2.txt "$stamp"; then
  "${PIP[@]}" -r requirements/dropin-v2.txt
  cp requirements/dropin-v2.txt "$stamp"
fi

V1=$CACHE/v1
stamp=$V1/.requirements
if [ ! -x "$V1/bin/python" ] || ! cmp -s requirements/dropin-v1.txt "$stamp"; then
  python3 -m venv "$V1"
  "$V1/bin/python" -m pip install -q --disable-pip-version-check -r requirements/dropin-v1.txt
  cp requirements/dropin-v1.txt "$stamp"
fi
site=$("$V1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$ROOT/python" > "$site/jetmcp-checkout.pth"
"$V1/bin/python" -c 'import jetmcp._wire, mcp.server.fastmcp'

# Old official SDKs (tests/compat/dropin/test_old_sdk.py): the oldest jetmcp serves (1.2.0) and one
# in the middle (1.6.0, before mcp.server.experimental), each in its own environment.
for version in 1.2.0 1.6.0; do
  OLD=$CACHE/mcp-$version
  stamp=$OLD/.requirements
  if [ ! -x "$OLD/bin/python" ] || ! cmp -s "requirements/dropin-mcp-$version.txt" "$stamp"; then
    python3 -m venv "$OLD"
    "$OLD/bin/python" -m pip install -q --disable-pip-version-check \
      -r "requirements/dropin-mcp-$version.txt"
    cp "requirements/dropin-mcp-$version.txt" "$stamp"
  fi
  site=$("$OLD/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$ROOT/python" > "$site/jetmcp-checkout.pth"
  "$OLD/bin/python" -c 'import jetmcp._wire, mcp.server.fastmcp'
done
