#!/usr/bin/env bash
# Runs the Python SDK's tests: real extensions written with the SDK against the
# real zot binary. Arguments go to pytest (e.g. -k deferred, -x).
#
#   ZOT_BIN           the zot to test; default $CARGO_TARGET_DIR/debug/zot
#                     (target/ in the repository), built with cargo if missing
#   PYTHON            the interpreter for the virtualenv (default python3, >= 3.9)
#
# The virtualenv lives in target/py-venv and is reused; pytest, jsonschema (the
# schema checks) and websockets (serve_websocket) come from PyPI, pinned in
# tests/requirements.txt; the SDK is installed editable from here.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
venv="$repo/target/py-venv"
python=${PYTHON:-python3}

if [ -z "${ZOT_BIN:-}" ]; then
  ZOT_BIN="${CARGO_TARGET_DIR:-$repo/target}/debug/zot"
  if [ ! -x "$ZOT_BIN" ]; then
    echo "run-tests.sh: no zot at $ZOT_BIN; building it (cargo build -p zot)" >&2
    (cd "$repo" && cargo build -p zot)
  fi
fi
if [ ! -x "$ZOT_BIN" ]; then
  echo "run-tests.sh: ZOT_BIN=$ZOT_BIN is not an executable" >&2
  exit 2
fi
export ZOT_BIN

if [ ! -x "$venv/bin/python" ]; then
  "$python" -c 'import sys; sys.exit(sys.version_info < (3, 9))' || {
    echo "run-tests.sh: $python is older than Python 3.9" >&2
    exit 2
  }
  echo "run-tests.sh: creating $venv" >&2
  mkdir -p "$repo/target"
  "$python" -m venv "$venv"
fi
vpy="$venv/bin/python"

# Nothing else writes .pyc files or caches into the source tree.
export PYTHONDONTWRITEBYTECODE=1
export PIP_DISABLE_PIP_VERSION_CHECK=1

# Pinned in tests/requirements.txt; installed again only when its hash changes.
lock="$here/tests/requirements.txt"
lock_hash=$(sha256sum "$lock" | cut -d' ' -f1)
stamp="$venv/.requirements-sha256"
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock_hash" ]; then
  "$vpy" -m pip install --quiet -r "$lock"
  echo "$lock_hash" > "$stamp"
fi
# The SDK, editable, so installed copies of the examples find it like a user's would.
if ! (cd / && "$vpy" -c "import sys, zot_ext; sys.exit(zot_ext.__file__ != '$here/zot_ext/__init__.py')") 2>/dev/null; then
  "$vpy" -m pip install --quiet -e "$here"
fi

cd "$here"
exec "$vpy" -m pytest -p no:cacheprovider "$@"
