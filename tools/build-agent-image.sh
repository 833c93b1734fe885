#!/usr/bin/env bash
# tools/build-agent-image.sh — the reference image for agent runs, made
# without Docker and imported into corral's image store (docs/images.md).
#
#   tools/build-agent-image.sh [NAME]        (root; default NAME corral-agent)
#
# 1. A Debian 12 (bookworm) base by debootstrap, from the first Debian mirror
#    this host's apt is configured with (override: MIRROR=URL), with
#    ca-certificates, Node.js (Debian's), git, bash and coreutils.
# 2. The pinned agent CLIs (claude, codex, pi) from the npm registry, into
#    /usr/local/lib/corral-agents as tools/install-npm-deps.sh installs them
#    on a host (the one pin list), as a second layer.
# 3. An OCI image layout written here: the two layers as plain tars, a config
#    (PATH with the CLIs, WorkingDir /workspace, Cmd bash), a manifest, the
#    index; then `corral image import LAYOUT --name NAME`.
#
# Slow (minutes) and needs the network to the mirror and the npm registry:
# never run by CI. STATE_DIR: --state-dir of `corral image` ($CORRAL_STATE_DIR
# or /var/lib/corral); CORRAL=path to the corral binary (default: `corral`).
set -euo pipefail

name=${1:-corral-agent}
root_dir=$(cd "$(dirname "$0")/.." && pwd)
corral=${CORRAL:-corral}
state_dir=${CORRAL_STATE_DIR:-/var/lib/corral}
prefix=/usr/local/lib/corral-agents

if [ "$(id -u)" -ne 0 ]; then
  echo "build-agent-image: must run as root (debootstrap, and layers keep their owners)" >&2
  exit 1
fi
for tool in debootstrap npm sha256sum tar; do
  command -v "$tool" >/dev/null || { echo "build-agent-image: $tool is missing (apt-get install $tool)" >&2; exit 1; }
done

# The mirror apt already uses: deb822 sources first, then sources.list.
if [ -z "${MIRROR:-}" ]; then
  MIRROR=$(awk '/^URIs:/ && $2 ~ /debian\/?$/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  [ -n "$MIRROR" ] || MIRROR=$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
fi
[ -n "$MIRROR" ] || { echo "build-agent-image: no Debian mirror configured for apt; set MIRROR=URL" >&2; exit 1; }

work=$(mktemp -d /var/tmp/corral-agent-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "build-agent-image: debootstrap bookworm from $MIRROR"
debootstrap --variant=minbase --include=ca-certificates,nodejs,git,bash,coreutils,procps \
  bookworm "$work/base" "$MIRROR" >"$work/debootstrap.log" 2>&1 ||
  { tail -20 "$work/debootstrap.log" >&2; exit 1; }
rm -rf "$work/base/var/cache/apt/archives/"*.deb "$work/base/var/lib/apt/lists/"*

echo "build-agent-image: the pinned agent CLIs into $prefix (layer 2)"
mkdir -p "$work/agents$prefix"
CORRAL_AGENTS_PREFIX="$work/agents$prefix" "$root_dir/tools/install-npm-deps.sh"

layout="$work/layout"
mkdir -p "$layout/blobs/sha256"
# A layer: a plain tar of the tree, numeric owners; the box gets its own
# /dev, /proc and /sys, so their contents stay out (corral refuses device nodes).
add_layer() {  # $1 = tree; prints the digest's hex
  local tmp="$work/layer.tar" hex
  tar -C "$1" --numeric-owner --xattrs --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -cf "$tmp" .
  hex=$(sha256sum "$tmp" | cut -d' ' -f1)
  mv "$tmp" "$layout/blobs/sha256/$hex"
  echo "$hex"
}
add_blob() {  # $1 = content; prints the digest's hex
  local hex
  hex=$(printf '%s' "$1" | sha256sum | cut -d' ' -f1)
  printf '%s' "$1" >"$layout/blobs/sha256/$hex"
  echo "$hex"
}
size_of() { stat -c %s "$layout/blobs/sha256/$1"; }

base=$(add_layer "$work/base")
agents=$(add_layer "$work/agents")
path="$prefix/node_modules/.bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
config=$(printf '{"architecture":"amd64","os":"linux","config":{"Env":["PATH=%s","LANG=C.UTF-8"],"WorkingDir":"/workspace","Cmd":["/bin/bash"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s","sha256:%s"]}}' \
  "$path" "$base" "$agents")
config_hex=$(add_blob "$config")
manifest=$(printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s},{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
  "$config_hex" "$(size_of "$config_hex")" "$base" "$(size_of "$base")" "$agents" "$(size_of "$agents")")
manifest_hex=$(add_blob "$manifest")
printf '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"os":"linux","architecture":"amd64"}}]}' \
  "$manifest_hex" "$(size_of "$manifest_hex")" >"$layout/index.json"

if ! "$corral" image import "$layout" --name "$name" --state-dir "$state_dir"; then
  # Minutes of work: kept for a second `corral image import` by hand.
  trap - EXIT
  echo "build-agent-image: the import failed; the OCI layout is kept in $layout" >&2
  exit 1
fi
echo "build-agent-image: done; use it with --rootfs image:$name or rootfs = \"image:$name\""
