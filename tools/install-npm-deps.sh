#!/usr/bin/env bash
# tools/install-npm-deps.sh — node packages the tests and benchmarks use
# (package.json / package-lock.json at the repo root; installed into the
# repo's node_modules/, which is gitignored). Called by tools/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null; then
  echo "install-npm-deps: npm not found (tools/install-deps.sh installs it)" >&2
  exit 1
fi
# `npm ci` reproduces package-lock.json exactly; skip it when that version is in place.
want=$(node -p 'require("./package-lock.json").packages["node_modules/ws"].version')
have=$(node -p 'try { require("./node_modules/ws/package.json").version } catch (e) { "" }')
[ "$want" = "$have" ] && exit 0
npm ci --no-audit --no-fund --loglevel=error
