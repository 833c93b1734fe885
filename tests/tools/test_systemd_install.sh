#!/usr/bin/env bash
# tools/systemd as `meson install` puts it: the unit and the tmpfiles rule
# land where systemd looks under the prefix, the unit names the installed
# binary, `systemd-analyze verify` accepts it, its offline security exposure
# stays low, and the tmpfiles rule makes /run/corral and /var/lib/corral with
# the right modes. (Starting the unit needs systemd as PID 1, which a test
# cannot assume; docs/operations.md.) Exit 77 without systemd's tools.
set -euo pipefail
for p in systemd-analyze systemd-tmpfiles; do
  command -v "$p" >/dev/null || { echo "SKIP: $p not found (systemd's tools are not installed)"; exit 77; }
done
build=${CORRAL_BUILD_ROOT:?run through meson test}
dest=$(mktemp -d /tmp/corral-install-XXXXXX)
trap 'rm -rf "$dest"' EXIT
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >/dev/null
fail() { echo "FAIL: $*" >&2; exit 1; }

unit=$(find "$dest" -path '*/lib/systemd/system/corral-gateway.service' -type f)
rule=$(find "$dest" -path '*/lib/tmpfiles.d/corral.conf' -type f)
[ -n "$unit" ] || fail "no corral-gateway.service under */lib/systemd/system in $(find "$dest" -type f)"
[ -n "$rule" ] || fail "no corral.conf under */lib/tmpfiles.d"
exec_line=$(grep '^ExecStart=' "$unit")
bin=${exec_line#ExecStart=}
bin=${bin%% *}
[ -x "$dest$bin" ] || fail "ExecStart names $bin, which was not installed"
[ "$exec_line" = "ExecStart=$bin gateway --org /etc/corral" ] || fail "unexpected $exec_line"
help=$("$dest$bin" gateway --help)  # not piped into grep -q: with pipefail that races SIGPIPE
grep -q -- '--grace D' <<<"$help" || fail "the installed binary has no --grace"

# verify checks that every command exists: point ExecStart at the installed copy.
sed "s#^ExecStart=$bin#ExecStart=$dest$bin#" "$unit" > "$dest/corral-gateway.service"
# It also runs `man` for the unit's Documentation=man:corral(1): the page
# as installed here.
man_page=$(find "$dest" -path '*/man1/corral.1' -type f)
[ -n "$man_page" ] || fail "no man1/corral.1 installed"
# (Without man-db, verify is told not to look: --man=no.)
man_check=()
command -v man >/dev/null || man_check=(--man=no)
MANPATH=$(dirname "$(dirname "$man_page")") systemd-analyze verify "${man_check[@]}" "$dest/corral-gateway.service" ||
  fail "systemd-analyze verify refused the unit"

# Lower is better (0 = fully sandboxed, 10 = not at all); the unit scores 2.1.
report=$(systemd-analyze security --offline=true --root="$dest" corral-gateway.service 2>&1) ||
  fail "systemd-analyze security failed: $report"
level=$(printf '%s\n' "$report" | sed -n 's/.*Overall exposure level for corral-gateway.service: \([0-9.]*\).*/\1/p')
[ -n "$level" ] || fail "no exposure level in: $report"
awk -v l="$level" 'BEGIN { exit !(l < 3.0) }' || fail "exposure level $level, expected below 3.0: $report"

systemd-tmpfiles --create --root="$dest" "$rule"
[ "$(stat -c %a "$dest/run/corral")" = 755 ] || fail "/run/corral is not 0755"
[ "$(stat -c %a "$dest/var/lib/corral")" = 700 ] || fail "/var/lib/corral is not 0700"
echo "ok: $unit (exposure $level), $rule"
