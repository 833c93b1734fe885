#!/usr/bin/env bash
# tools/test-failures.sh BUILDDIR [LOGBASE] — after a failed `meson test`, the failed
# suites' own words, short: for each suite whose result is not a pass or a
# skip, its doctest "TEST CASE"/"ERROR"/"FATAL" lines and the few lines after
# each (the values and INFO that say why), then its last lines. tools/test.sh
# prints this last, so a CI log that keeps only its tail still shows which
# assertion failed, not only which suite.
set -uo pipefail
log=${1:?usage: tools/test-failures.sh BUILDDIR [LOGBASE]}/meson-logs/${2:-testlog}.txt
[ -r "$log" ] || { echo "tools/test-failures.sh: no $log to read" >&2; exit 0; }

echo "=== failed suites, in short (full log: $log)"
awk '
  function flush(   i, n, shown, ctx) {
    if (name == "" || result ~ /^(exit status 0|exit status 77|SKIP|OK)/) return
    print "--- " name ": " result
    n = 0; ctx = 0
    for (i = 1; i <= count; i++) {
      if (body[i] ~ /TEST CASE:|ERROR:|FATAL|FAIL:|Assertion|Sanitizer|runtime error/) ctx = 4
      if (ctx > 0 && n < 60) { print "  " body[i]; n++; ctx-- }
    }
    shown = (count > 8) ? count - 7 : 1
    print "  ... last lines:"
    for (i = shown; i <= count; i++) print "  " body[i]
  }
  /^==================================== [0-9]+\/[0-9]+ =+$/ { flush(); name = ""; result = ""; count = 0; next }
  /^test: / { sub(/^test: +/, ""); name = $0; next }
  /^result: / { sub(/^result: +/, ""); result = $0; next }
  name != "" { body[++count] = $0 }
  END { flush() }
' "$log"
