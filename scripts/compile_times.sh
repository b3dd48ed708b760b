#!/usr/bin/env bash
# Compile time of every example on every `--pipeline` path: the wall time of
# `nkc compile FILE --emit isa --pipeline P`, the best of RUNS runs (3 by default), in ms, and
# the simulated cycles (`nkc run --json`). With OLD=path/to/another/nkc it times that binary too,
# interleaved, and prints both columns (cycles from each), so a change can be measured on a busy
# machine: `OLD=/tmp/nkc-before bash scripts/compile_times.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."
NKC=${NKC:-target/release/nkc}
RUNS=${RUNS:-3}
cargo build -q --release --bin nkc
best() {
  local best=
  for _ in $(seq "$RUNS"); do
    local s e
    s=$(date +%s%N)
    "$@" > /dev/null
    e=$(date +%s%N)
    local t=$(((e - s) / 1000))
    if [ -z "$best" ] || [ "$t" -lt "$best" ]; then best=$t; fi
  done
  printf '%d.%d' $((best / 1000)) $((best % 1000 / 100))
}
cycles() {
  "$@" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["cycles"])'
}
if [ -n "${OLD:-}" ]; then
  echo "| example | --pipeline | old ms | new ms | old cycles | new cycles |"
  echo "| --- | --- | ---: | ---: | ---: | ---: |"
else
  echo "| example | --pipeline | ms | cycles |"
  echo "| --- | --- | ---: | ---: |"
fi
for f in examples/*.nk; do
  for p in default annotated emergent none; do
    new=$(best "$NKC" compile "$f" --emit isa --pipeline "$p")
    newc=$(cycles "$NKC" run "$f" --pipeline "$p")
    if [ -n "${OLD:-}" ]; then
      old=$(best "$OLD" compile "$f" --emit isa --pipeline "$p")
      oldc=$(cycles "$OLD" run "$f" --pipeline "$p")
      echo "| $(basename "$f" .nk) | $p | $old | $new | $oldc | $newc |"
    else
      echo "| $(basename "$f" .nk) | $p | $new | $newc |"
    fi
  done
done
