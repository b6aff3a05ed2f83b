#!/bin/bash
# Emits the bundle of one in-memory fixture and checks it end to end:
#   run_bundle.sh FIXTURE_TOOL NAME WORKDIR full|dry
# NAME: an in-memory fixture, FILE.dtp:STRATEGY, or FILE.dtp (all its fixed
# strategies).
# - every file of DSL.md section 5 is there;
# - `dot -Tsvg` renders sharding.dot with nothing on stderr;
# - the launch scripts pass `bash -n` (and shellcheck when installed);
# - full: the skeleton configures and builds with CMake + nvcc (one arch,
#   -O1), starts without a GPU driver for --dry-run, and its CHECK macro
#   reports the first failing CUDA call with file:line;
#   dry: the skeleton's host-only --dry-run build (g++ -DDTPLAN_DRY_RUN_ONLY);
# - the --dry-run rank layout equals planner::rank_layout's.
set -euo pipefail

tool="$1"
name="$2"
work="$3"
mode="${4:-dry}"
tag="$(basename "${name//:/_}")"
bundle="$work/$tag"

# A .dtp file without ':STRATEGY': every fixed strategy in turn, the first
# one in `mode`, the others with the quick host-only build.
if [[ "$name" == *.dtp ]]; then
  first=1
  strategies=$("$tool" strategies "$name") || fail "cannot read the strategies"
  [ -n "$strategies" ] || fail "no named fixed strategy"
  for s in $strategies; do
    if [ $first = 1 ]; then m="$mode"; else m=dry; fi
    "$0" "$tool" "$name:$s" "$work" "$m" || exit 1
    first=0
  done
  exit 0
fi

fail() {
  echo "FAIL [$name]: $*" >&2
  exit 1
}

rm -rf "$bundle"
"$tool" emit "$name" "$bundle" || fail "emit failed"
for f in plan.json sharding.dot skeleton/CMakeLists.txt skeleton/train_step.cu launch/slurm.sbatch launch/mpirun.sh; do
  [ -s "$bundle/$f" ] || fail "missing $f"
done
[ -x "$bundle/launch/mpirun.sh" ] || fail "launch/mpirun.sh is not executable"

if command -v dot >/dev/null; then
  [ -s "$bundle/sharding.svg" ] || fail "sharding.svg not rendered although dot is installed"
  dot -Tsvg "$bundle/sharding.dot" -o "$work/$tag.svg" 2>"$work/$tag.dot.err" || fail "dot failed"
  [ ! -s "$work/$tag.dot.err" ] || fail "dot warnings: $(cat "$work/$tag.dot.err")"
else
  echo "note: dot (Graphviz) not installed; sharding.dot not rendered"
fi

bash -n "$bundle/launch/slurm.sbatch" || fail "slurm.sbatch has a syntax error"
bash -n "$bundle/launch/mpirun.sh" || fail "mpirun.sh has a syntax error"
if command -v shellcheck >/dev/null; then
  shellcheck "$bundle/launch/slurm.sbatch" "$bundle/launch/mpirun.sh" || fail "shellcheck"
fi

skeleton="$bundle/skeleton"
if [ "$mode" = full ] && ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "note: nvcc not found; building the host-only --dry-run program instead of the CUDA skeleton"
  mode=dry
fi
if [ "$mode" = full ]; then
  cmake -S "$skeleton" -B "$skeleton/build" -DCMAKE_BUILD_TYPE=Test -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_CUDA_FLAGS=-O1 -DCMAKE_CXX_FLAGS=-O1 >"$work/$tag.configure.log" 2>&1 ||
    fail "cmake configure failed: $(tail -20 "$work/$tag.configure.log")"
  cmake --build "$skeleton/build" >"$work/$tag.build.log" 2>&1 || fail "build failed: $(tail -40 "$work/$tag.build.log")"
  if grep -E "warning|error" "$work/$tag.build.log"; then fail "compiler warnings"; fi
  binary="$skeleton/build/train_step"
else
  ${CXX:-c++} -std=c++17 -O0 -Wall -Wextra -Werror -x c++ -DDTPLAN_DRY_RUN_ONLY "$skeleton/train_step.cu" \
    -o "$work/$tag.dry" || fail "host-only build failed"
  binary="$work/$tag.dry"
fi

world=$("$tool" world "$name")
"$binary" --dry-run --world "$world" >"$work/$tag.layout" || fail "--dry-run failed"
"$tool" layout "$name" >"$work/$tag.expected"
grep '^rank ' "$work/$tag.layout" | diff "$work/$tag.expected" - >"$work/$tag.diff" ||
  fail "dry-run layout differs from planner::rank_layout: $(head -20 "$work/$tag.diff")"
[ "$(grep -c '^rank ' "$work/$tag.layout")" = "$world" ] || fail "expected $world rank lines"
"$binary" --dry-run --world $((2 * world)) | grep '^rank ' >"$work/$tag.layout2" || fail "--dry-run --world failed"
"$tool" layout "$name" $((2 * world)) | diff - "$work/$tag.layout2" >"$work/$tag.diff" ||
  fail "dry-run layout for $((2 * world)) ranks differs: $(head -20 "$work/$tag.diff")"
if "$binary" --dry-run --world 0 >/dev/null 2>&1; then fail "--dry-run accepted a world of 0 ranks"; fi

if [ "$mode" = full ] && [ ! -e /dev/nvidia0 ]; then
  # No GPU here: the first CUDA call must fail through CUDA_CHECK, naming
  # the file, the line and the call, and the program must exit non-zero.
  if OMPI_COMM_WORLD_SIZE="$world" "$binary" --no-mpi >"$work/$tag.run.out" 2>&1; then
    fail "train_step succeeded without a GPU"
  fi
  grep -Eq 'train_step\.cu:[0-9]+: cudaGetDeviceCount\(&devices\) failed: ' "$work/$tag.run.out" ||
    fail "CUDA_CHECK message not found: $(cat "$work/$tag.run.out")"
  if "$binary" --no-mpi >"$work/$tag.run.out" 2>&1; then fail "a world of 1 rank was accepted"; fi
  grep -q "needs $world ranks, this job has 1" "$work/$tag.run.out" || fail "world-size check: $(cat "$work/$tag.run.out")"
fi
echo "ok [$name] ($mode)"
