#!/usr/bin/env bash
# The generated man page and bash completion (tools/gen_docs.cpp), as
# `meson install` puts them: installed under share/man/man1 and
# share/bash-completion/completions; every option of `corral run`'s table and
# every subcommand in both; the completion completes `corral run --wor<TAB>`
# in a real bash; the man page renders with `man -l` (or groff). Exit 77 when
# neither man nor groff is there to render it.
set -euo pipefail
build=${CORRAL_BUILD_ROOT:?run through meson test}
gen=$build/tools/gen_docs
fail() { echo "FAIL: $*" >&2; exit 1; }
dest=$(mktemp -d /tmp/corral-docs-XXXXXX)
trap 'rm -rf "$dest"' EXIT
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >/dev/null
man_page=$(find "$dest" -path '*/share/man/man1/corral.1' -type f)
completion=$(find "$dest" -path '*/share/bash-completion/completions/corral' -type f)
[ -n "$man_page" ] || fail "no share/man/man1/corral.1 installed: $(find "$dest" -type f)"
[ -n "$completion" ] || fail "no share/bash-completion/completions/corral installed"

# Every option and subcommand in both (the man page spells '-' as '\-').
count=0
while read -r a b; do
  if [ "$a" = subcommand ]; then name=$b; else name=$a; fi
  roff=${name//-/\\-}
  grep -qF -- ".B $roff" "$man_page" || fail "$name is not in the man page"
  grep -qw -- "$name" "$completion" || fail "$name is not in the bash completion"
  count=$((count + 1))
done < <("$gen" options)
[ "$count" -ge 30 ] || fail "only $count names from gen_docs options"

# The completion, loaded into a fresh bash: registered for corral, and
# completing what a user types.
complete_words() {  # the words of a command line; the last one is being completed
  bash --norc --noprofile -c '
    source "$1"; shift
    complete -p corral | grep -q -- "-F _corral corral" || { echo "not registered: $(complete -p corral)"; exit 1; }
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
    _corral
    printf "%s\n" "${COMPREPLY[@]}"' _ "$completion" "$@"
}
[ "$(complete_words corral run --wor | sort | tr '\n' ' ')" = "--worker --workspace " ] ||
  fail "corral run --wor completes to: $(complete_words corral run --wor | tr '\n' ' ')"
[ "$(complete_words corral run --ro- | tr '\n' ' ')" = "--ro-bind " ] || fail "--ro- did not complete to --ro-bind"
[ "$(complete_words corral va)" = validate ] || fail "corral va did not complete to validate"
[ "$(complete_words corral help do)" = doctor ] || fail "corral help do did not complete to doctor"
# completes WORD CMDLINE...: WORD is among the completions. Held in a variable
# first: with pipefail, `complete_words | grep -q` fails whenever grep quits
# before a long list (every command on PATH) is written, as SIGPIPE.
completes() {
  local want=$1 out
  shift
  out=$(complete_words "$@")
  grep -qx -- "$want" <<<"$out"
}
# A value is never completed as an option; after -- come commands.
[ -z "$(complete_words corral run --memory --)" ] || fail "the value of --memory was completed as an option"
completes echo corral run -- ech || fail "after --, commands are not completed"
# A directory option completes directories.
mkdir -p "$dest/somedir"
completes "$dest/somedir" corral run --workspace "$dest/some" || fail "--workspace did not complete a directory"

# Values from disk, through the hidden `corral __complete` (the corral being
# completed is the one typed): run ids for logs/stop/inspect (newest first),
# images for image inspect|rm, workers of the line's --config for --worker.
corral=$build/tools/corral
state=$dest/state
mkdir -p "$state/runs/20261206T120000Z-abc123" "$state/runs/20261205T090000Z-0f0f0f" "$state/images/images" \
  "$dest/org/workers/alpha" "$dest/org/workers/\$(touch $dest/pwned)"
printf '{"name":"alpine-3","layers":[],"config":{}}\n' >"$state/images/images/alpine-3.json"
touch "$dest/org/workers/alpha/worker.toml" "$dest/org/workers/\$(touch $dest/pwned)/worker.toml"
[ "$(complete_words "$corral" logs --state-dir "$state" 2026 | tr '\n' ' ')" = \
  "20261206T120000Z-abc123 20261205T090000Z-0f0f0f " ] ||
  fail "corral logs 2026<TAB> offers: $(complete_words "$corral" logs --state-dir "$state" 2026 | tr '\n' ' ')"
completes 20261206T120000Z-abc123 "$corral" inspect --state-dir="$state" "" || fail "inspect does not offer run ids"
[ "$(complete_words "$corral" image rm --state-dir "$state" al)" = alpine-3 ] || fail "image rm al<TAB> did not offer alpine-3"
[ "$(complete_words "$corral" run --config "$dest/org" --worker "")" = alpha ] ||
  fail "run --worker <TAB> offers: $(complete_words "$corral" run --config "$dest/org" --worker "" | tr '\n' ' ')"
[ ! -e "$dest/pwned" ] || fail "a worker's directory name was expanded by the completion"
# Options still complete where a positional goes; nothing readable, nothing offered.
completes --follow "$corral" logs --state-dir "$state" --fol || fail "logs --fol did not complete to --follow"
[ -z "$(complete_words "$corral" stop --state-dir "$dest/nonexistent" "")" ] || fail "a missing state dir offered words"
"$corral" __complete bogus >/dev/null || fail "__complete with an unknown kind failed"

# The page renders, with its sections, and every option shows as typed.
if command -v man >/dev/null; then
  text=$(MANWIDTH=100 man -l "$man_page" 2>&1) || fail "man -l failed: $text"
elif command -v groff >/dev/null; then
  text=$(groff -man -Tutf8 "$man_page" 2>&1) || fail "groff failed: $text"
else
  echo "SKIP: neither man nor groff is installed to render the page"; exit 77
fi
text=$(printf '%s' "$text" | sed 's/.\x08//g')  # no overstrike
for section in NAME SYNOPSIS SUBCOMMANDS "RUN OPTIONS" "EXIT STATUS"; do
  grep -q "^$section" <<<"$text" || fail "the rendered page has no $section section"
done
while read -r a b; do
  [ "$a" = subcommand ] && continue
  grep -qF -- "$a" <<<"$text" || fail "$a does not show in the rendered page"
done < <("$gen" options)
echo "ok: $count names in the man page and the completion"
