#!/usr/bin/env bash
# Runs the @zot/ext test suite (node --test) against a real zot binary.
#
#   ZOT_BIN=/path/to/zot sdk/typescript/run-tests.sh [test files…]
#
# Without ZOT_BIN it uses $CARGO_TARGET_DIR (or the repo's target/)
# debug/zot, building it with `cargo build -p zot` when it is missing.
# Test-only devDependencies (typescript, @types/node, ajv) are installed
# with `npm ci` when node_modules is missing or older than the lock file.
set -euo pipefail

sdk=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$sdk/../.." && pwd)
cd "$sdk"

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "run-tests.sh: $1 is required: $2" >&2; exit 1; }
}
need node "Node.js 18 or newer"
need npm "it comes with Node.js"

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "run-tests.sh: installing devDependencies (npm ci)" >&2
  npm ci --no-audit --no-fund >&2
fi

if [ -z "${ZOT_BIN:-}" ]; then
  ZOT_BIN="${CARGO_TARGET_DIR:-$repo/target}/debug/zot"
  if [ ! -x "$ZOT_BIN" ]; then
    need cargo "to build zot (or set ZOT_BIN)"
    echo "run-tests.sh: building zot (cargo build -p zot)" >&2
    (cd "$repo" && cargo build -p zot) >&2
  fi
fi
if [ ! -x "$ZOT_BIN" ]; then
  echo "run-tests.sh: ZOT_BIN=$ZOT_BIN is not an executable zot binary" >&2
  exit 1
fi
ZOT_BIN=$(cd "$(dirname "$ZOT_BIN")" && pwd)/$(basename "$ZOT_BIN")
export ZOT_BIN
echo "run-tests.sh: zot is $ZOT_BIN ($("$ZOT_BIN" --version))" >&2

if [ "$#" -eq 0 ]; then
  set -- test/*.test.mjs
fi
# Every wait inside the tests has its own timeout; this is the backstop.
exec node --test --test-timeout=180000 "$@"
