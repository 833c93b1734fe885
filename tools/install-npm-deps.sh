#!/usr/bin/env bash
# tools/install-npm-deps.sh — the npm packages corral's tests and runs use.
# Called (as root) by tools/test.sh. Idempotent: each part is skipped when the
# pinned versions are already in place.
#
# 1. Test tools (package.json / package-lock.json at the repo root, each
#    pinned exactly: `ws` for the gateway's WebSocket tests; the real MCP
#    components of tests/mcp_e2e: the SDK (client and server classes),
#    server-filesystem, server-everything, inspector-cli and the conformance
#    suite), installed into the repo's node_modules/ (gitignored) with
#    `npm ci`. conformance stays at 0.1.13: 0.1.14 and later import
#    fs.globSync, which Node 20 (this host's) does not have.
# 2. The PINNED agent CLIs (claude-code, codex, pi) in
#    /usr/local/lib/corral-agents. Why under /usr: `corral run --rootfs host`
#    shows the host's /usr read-only in the box, so the CLIs are runnable in a
#    sandbox without building an image. Pinned because the sentinel credential
#    shapes, flags and telemetry switches corral relies on are CLI internals
#    (docs/agents.md); a bump is a deliberate change that reruns the e2e suite
#    (tests/agents) and regenerates the golden files.
#    CORRAL_AGENTS_PREFIX overrides the prefix (experiments only).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v npm >/dev/null; then
  echo "install-npm-deps: npm not found (tools/install-deps.sh installs it)" >&2
  exit 1
fi

# --- 1. test tools from the repo's lockfile ---
# Every direct dependency in package.json (exact pins) must be installed at
# its pinned version; the first that is not names itself.
test_tools_stale() {
  node -e '
    const deps = require("./package.json").dependencies;
    for (const [name, want] of Object.entries(deps)) {
      let have = "";
      try { have = require("./node_modules/" + name + "/package.json").version; } catch (e) {}
      if (have !== want) { process.stdout.write(name + " is " + (have || "absent") + ", pinned " + want); break; }
    }'
}
stale=$(test_tools_stale)
if [ -n "$stale" ]; then
  echo "install-npm-deps: $stale; running npm ci"
  # `npm ci` reproduces package-lock.json exactly.
  npm ci --no-audit --no-fund --loglevel=error
  stale=$(test_tools_stale)
  if [ -n "$stale" ]; then
    echo "install-npm-deps: after npm ci, $stale (package.json and package-lock.json disagree?)" >&2
    exit 1
  fi
fi

# --- 2. the agent CLIs ---
prefix=${CORRAL_AGENTS_PREFIX:-/usr/local/lib/corral-agents}
AGENT_PACKAGES=(
  "@anthropic-ai/claude-code@2.1.332"
  "@openai/codex@0.171.0"
  "@mariozechner/pi-coding-agent@0.73.1"
)

installed_version() {  # $1 = package name; prints the installed version or nothing
  local manifest="$prefix/node_modules/$1/package.json"
  [ -f "$manifest" ] || return 0
  node -e 'process.stdout.write(require(process.argv[1]).version || "")' "$manifest"
}

all_pinned() {
  local spec name want
  for spec in "${AGENT_PACKAGES[@]}"; do
    name=${spec%@*}
    want=${spec##*@}
    [ "$(installed_version "$name")" = "$want" ] || return 1
  done
}

if all_pinned; then
  exit 0
fi
mkdir -p "$prefix"
echo "install-npm-deps: installing ${AGENT_PACKAGES[*]} into $prefix"
# One call so npm resolves one tree; --save-exact keeps the pins in
# $prefix/package.json. claude-code's postinstall copies its native binary
# into bin/claude.exe, so scripts must run.
npm install --prefix "$prefix" --save-exact --no-audit --no-fund --loglevel=error "${AGENT_PACKAGES[@]}"
# A partial install must not look like success.
for spec in "${AGENT_PACKAGES[@]}"; do
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
echo "install-npm-deps: agent CLIs installed in $prefix"
