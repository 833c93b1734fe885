#!/usr/bin/env bash
# tools/bench/mcp-tools-list.sh [TOOLS] — builds tools/bench/mcp-tools-list.cpp
# against mcp/ and base/sha256 and runs it: what filtering and pinning a
# tools/list answer of TOOLS (default 100) tools costs (docs/tools.md "Cost").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=$(mktemp -d /tmp/corral-mcp-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
g++ -O2 -std=c++20 -D_GNU_SOURCE -I"$src" -o "$work/mcp-tools-list" "$here/mcp-tools-list.cpp" \
  "$src"/mcp/*.cpp "$src"/base/sha256.cpp "$src"/base/strict_json.cpp "$src"/base/strict_json_fast.cpp "$src"/base/parse.cpp "$src"/base/glob.cpp -lcrypto -lsodium
"$work/mcp-tools-list" "${1:-100}"
