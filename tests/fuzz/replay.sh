#!/usr/bin/env bash
# One fuzz target's replay test (tests/fuzz.cmake):
#   replay.sh FUZZ_REPLAY_BINARY pipeline|jobs|extreme WORKDIR SANITIZED(0|1)
# Runs the target on its seeds (tests/fuzz/make_seeds.sh; extreme has none),
# then on mutants of them, or on random bytes for extreme, each chosen by a
# fixed seed: the same inputs every run, some 5,000 of each target's (fewer
# under the sanitizers, which run each input some ten times slower). A violated promise or a sanitizer
# report fails the test, with the input and the command that reproduces it.
set -euo pipefail
binary=$1
target=$2
work=$3/$target
sanitized=$4
src=$(cd "$(dirname "$0")/../.." && pwd)

rm -rf "$work"
mkdir -p "$work"
flags=(--seed 20261206 --last "$work/last-input")
case "$target" in
  pipeline)
    "$src/tests/fuzz/make_seeds.sh" "$work/seeds"
    if [ "$sanitized" = 1 ]; then n=300; else n=5000; fi
    flags+=(--mutants "$n" --dict "$src/tests/fuzz/dtplan.dict" --max-len 16384 "$work/seeds/pipeline") ;;
  jobs)
    "$src/tests/fuzz/make_seeds.sh" "$work/seeds"
    if [ "$sanitized" = 1 ]; then n=400; else n=5000; fi
    flags+=(--mutants "$n" --dict "$src/tests/fuzz/dtplan.dict" --max-len 16384 "$work/seeds/jobs") ;;
  extreme)
    if [ "$sanitized" = 1 ]; then n=30; else n=400; fi
    flags+=(--random "$n" --max-len 256) ;;
  *) echo "replay.sh: no target '$target'" >&2; exit 2 ;;
esac

if ! ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
     "$binary" "${flags[@]}"; then
  cp "$work/last-input" "$work/finding"
  echo "FAIL [fuzz $target]: the input: $work/finding" >&2
  echo "reproduce: $binary $work/finding" >&2
  exit 1
fi
