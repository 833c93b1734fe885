# tests/oci/runtime/engine_helpers.sh — sourced by the engine tests
# (test_podman_e2e.sh, test_containerd_e2e.sh): the counts, and the busybox
# image both import from an OCI archive.

failures=0
passes=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "ok: $*"; passes=$((passes + 1)); }
# check WHAT CMD...: ok when CMD succeeds.
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }

# skip_without TOOL...: exit 77 naming the first tool that is missing.
skip_without() {
  local tool
  for tool in "$@"; do
    if ! command -v "$tool" >/dev/null; then echo "SKIP: $tool is not installed (tools/install-deps.sh installs it)" >&2; exit 77; fi
  done
}

# copy_host_program ROOT PROGRAM: the host's PROGRAM (a path) and every
# library ldd names for it, at their own paths under ROOT.
copy_host_program() {
  local root=$1 prog=$2 lib
  cp -L --parents "$prog" "$root" || return 1
  for lib in $(ldd "$prog" | grep -o '/[^ ]*'); do cp -L --parents "$lib" "$root" || return 1; done
}

# make_busybox_archive DIR [PROGRAM...]: DIR/img.tar, an OCI image archive
# (umoci) whose one layer holds the host's static busybox as /bin/busybox
# and links to it for the applets the tests use, and each host PROGRAM (a
# path) with its libraries; PATH=/bin, Cmd /bin/sh.
make_busybox_archive() {
  local dir=$1 a p
  shift
  (
    cd "$dir" && umoci init --layout img && umoci new --image img:t && umoci unpack --image img:t b >/dev/null &&
      mkdir -p b/rootfs/bin && cp "$(command -v busybox)" b/rootfs/bin/busybox &&
      for a in sh echo cat id sleep ls wget hostname grep cut tr true env stty tty; do ln -s busybox "b/rootfs/bin/$a" || exit 1; done &&
      for p in "$@"; do copy_host_program b/rootfs "$p" || exit 1; done &&
      umoci repack --image img:t b && umoci config --image img:t --config.cmd /bin/sh --config.env PATH=/bin &&
      tar -C img -cf img.tar .
  ) > "$dir/image.log" 2>&1
}
