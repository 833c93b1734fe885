#!/usr/bin/env bash
# tools/install-npm-deps.sh — installs the PINNED agent CLIs (and any other npm
# package the tests need) into /usr/local/lib/corral-agents.
#
# Why under /usr: `corral run --rootfs host` shows the host's /usr read-only in
# the box, so the CLIs installed here are runnable inside a sandbox without
# building an image. Versions are pinned because the sentinel credential
# shapes, flags and telemetry switches corral relies on are CLI internals
# (docs/agents.md); a bump is a deliberate change that reruns the e2e suite.
#
# Idempotent: does nothing when every pinned version is already installed.
# Add a package by appending "name@version" to PACKAGES.
# Environment: CORRAL_AGENTS_PREFIX overrides the install prefix (tests only).
set -euo pipefail

prefix=${CORRAL_AGENTS_PREFIX:-/usr/local/lib/corral-agents}

PACKAGES=(
  "@anthropic-ai/claude-code@2.1.332"
  "@openai/codex@0.171.0"
  "@mariozechner/pi-coding-agent@0.73.1"
)

installed_version() {  # $1 = package name; prints the installed version or nothing
  local manifest="$prefix/node_modules/$1/package.json"
  [ -f "$manifest" ] || return 0
  node -e 'process.stdout.write(require(process.argv[1]).version || "")' "$manifest"
}

missing=()
for spec in "${PACKAGES[@]}"; do
  name=${spec%@*}
  want=${spec##*@}
  have=$(installed_version "$name")
  if [ "$have" != "$want" ]; then
    missing+=("$spec")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-npm-deps: all pinned packages present in $prefix"
  exit 0
fi

command -v npm >/dev/null || { echo "install-npm-deps: npm not found (tools/install-deps.sh installs it)" >&2; exit 1; }
mkdir -p "$prefix"
echo "install-npm-deps: installing ${missing[*]} into $prefix"
# All packages in one call so npm resolves one tree; --save-exact keeps the
# pins in $prefix/package.json for the next install.
npm install --prefix "$prefix" --save-exact --no-audit --no-fund --loglevel=error "${PACKAGES[@]}"

# Verify: a partial install must not look like success.
for spec in "${PACKAGES[@]}"; do
  name=${spec%@*}
  want=${spec##*@}
  have=$(installed_version "$name")
  if [ "$have" != "$want" ]; then
    echo "install-npm-deps: $name is '${have:-absent}' after install, expected $want" >&2
    exit 1
  fi
done
# World-readable so the sandbox's unprivileged agent UID can run them.
chmod -R a+rX "$prefix"
echo "install-npm-deps: done"
