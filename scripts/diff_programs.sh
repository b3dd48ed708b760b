#!/usr/bin/env bash
# Byte-for-byte comparison of the programs two nkc binaries emit: every kernel of
# `examples/*.nk` and `tests/good/*.nk` (each kernel of a file that defines several), on every
# `--pipeline` path (none, annotated, default, emergent, auto), with and without `--peel`,
# compiled with `nkc compile FILE --emit isa` by OLD_NKC and by NEW_NKC. Prints one line per
# program that differs (or that one binary compiles and the other refuses), then a count; exits 1
# when any differs. `EMIT=bir` compares another form; `FILES="a.nk b.nk"` other kernels.
# Usage: `scripts/diff_programs.sh OLD_NKC NEW_NKC` (from anywhere; paths are the repo's).
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 OLD_NKC NEW_NKC" >&2
  exit 2
fi
old=$(realpath "$1")
new=$(realpath "$2")
cd "$(dirname "$0")/.."
EMIT=${EMIT:-isa}
FILES=${FILES:-$(ls examples/*.nk tests/good/*.nk)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
total=0
differ=0
for f in $FILES; do
  kernels=$({ grep -oE '^def [A-Za-z_][A-Za-z0-9_]*' "$f" || true; } | cut -c5-)
  if [ "$(echo "$kernels" | wc -l)" -le 1 ]; then kernels=-; fi
  for k in $kernels; do
    for p in none annotated default emergent auto; do
      for peel in "" --peel; do
        args=(compile "$f" --emit "$EMIT" --pipeline "$p" $peel)
        if [ "$k" != - ]; then args+=(--kernel "$k"); fi
        total=$((total + 1))
        oldrc=0
        newrc=0
        "$old" "${args[@]}" > "$tmp/old" 2> "$tmp/olderr" || oldrc=$?
        "$new" "${args[@]}" > "$tmp/new" 2> "$tmp/newerr" || newrc=$?
        what="$f --pipeline $p $peel"
        if [ "$k" != - ]; then what="$f::$k --pipeline $p $peel"; fi
        if [ "$oldrc" != "$newrc" ]; then
          echo "DIFFERS (exit $oldrc -> $newrc): $what"
          differ=$((differ + 1))
        elif ! cmp -s "$tmp/old" "$tmp/new"; then
          echo "DIFFERS ($(diff "$tmp/old" "$tmp/new" | grep -c '^[<>]') lines): $what"
          differ=$((differ + 1))
        fi
      done
    done
  done
done
echo "$differ of $total programs differ"
[ "$differ" -eq 0 ]
