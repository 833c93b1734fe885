#!/usr/bin/env bash
# tools/bench/response-usage-parse.sh — builds and runs response-usage-parse.cpp:
# a model response read for its usage by nlohmann (corral today) and by
# simdjson on-demand (the candidate). Needs libsimdjson-dev (Debian 12:
# simdjson 3.0.1), which corral itself does not use yet.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ -f /usr/include/simdjson.h ] || { echo "response-usage-parse.sh: simdjson is missing (apt-get install libsimdjson-dev)" >&2; exit 2; }
work=$(mktemp -d /tmp/corral-usage-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
g++ -O2 -std=c++20 -o "$work/response-usage-parse" "$here/response-usage-parse.cpp" -lsimdjson
for round in 1 2 3; do echo "# round $round"; "$work/response-usage-parse"; done
