#!/usr/bin/env bash
# tools/debian-mirror.sh — print the Debian mirror this host's apt already
# uses (deb822 sources first, then sources.list), or $MIRROR when it is set.
# The one place the scripts that debootstrap (build-agent-image.sh,
# build-debian-root.sh) find where to fetch from. Exit 1 with a sentence
# when apt names none.
set -euo pipefail
if [ -n "${MIRROR:-}" ]; then
  echo "$MIRROR"
  exit 0
fi
mirror=$(awk '/^URIs:/ && $2 ~ /debian\/?$/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
[ -n "$mirror" ] || { echo "debian-mirror.sh: no Debian mirror configured for apt; set MIRROR=URL" >&2; exit 1; }
echo "$mirror"
