#!/usr/bin/env bash
# tools/bench/strict-json-parse.sh — builds tools/bench/strict-json-parse.cpp
# against base/strict_json and runs it (docs/benchmarks.md, session 35).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=$(mktemp -d /tmp/corral-strict-json-XXXXXX)
trap 'rm -rf "$work"' EXIT
g++ -O2 -std=c++20 -D_GNU_SOURCE -I"$src" -o "$work/strict-json-parse" "$here/strict-json-parse.cpp" \
  "$src"/base/strict_json.cpp "$src"/base/strict_json_fast.cpp "$src"/base/parse.cpp
"$work/strict-json-parse"
