#!/usr/bin/env bash
# tools/bench/model-body-parse.sh — builds tools/bench/model-body-parse.cpp
# against base/strict_json and runs it: the gateway's strict body parse vs
# nlohmann's (docs/benchmarks.md, issue 37's "stricter reading").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=$(mktemp -d /tmp/corral-body-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
g++ -O2 -std=c++20 -D_GNU_SOURCE -I"$src" -o "$work/model-body-parse" "$here/model-body-parse.cpp" \
  "$src"/base/strict_json.cpp "$src"/base/strict_json_fast.cpp "$src"/base/parse.cpp
"$work/model-body-parse"
