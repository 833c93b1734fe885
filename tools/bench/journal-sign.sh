#!/usr/bin/env bash
# tools/bench/journal-sign.sh [DIR] — builds tools/bench/journal-sign.cpp
# against the journal's sources and runs it with its files in DIR (default:
# /var/lib/corral/runs if it exists, else /tmp): sign each record vs not,
# group commit vs fdatasync each (docs/journal.md "Cost").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
dir=${1:-$( [ -d /var/lib/corral/runs ] && echo /var/lib/corral/runs || echo /tmp)}
work=$(mktemp -d /tmp/corral-journal-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
g++ -O2 -std=c++20 -D_GNU_SOURCE -I"$src" -o "$work/journal-sign" "$here/journal-sign.cpp" \
  "$src"/journal/*.cpp "$src"/base/{sha256,fd,sys_error,regular_file}.cpp -lcrypto
echo "journal files in $dir ($(df -T "$dir" | awk 'NR==2 {print $2}'))"
"$work/journal-sign" "$dir"
