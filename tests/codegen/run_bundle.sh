#!/bin/bash
# Emits the bundle of one in-memory fixture and checks it end to end:
#   run_bundle.sh FIXTURE_TOOL NAME WORKDIR full|dry
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
bundle="$work/$name"

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
  dot -Tsvg "$bundle/sharding.dot" -o "$work/$name.svg" 2>"$work/$name.dot.err" || fail "dot failed"
  [ ! -s "$work/$name.dot.err" ] || fail "dot warnings: $(cat "$work/$name.dot.err")"
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
    -DCMAKE_CUDA_FLAGS=-O1 -DCMAKE_CXX_FLAGS=-O1 >"$work/$name.configure.log" 2>&1 ||
    fail "cmake configure failed: $(tail -20 "$work/$name.configure.log")"
  cmake --build "$skeleton/build" >"$work/$name.build.log" 2>&1 || fail "build failed: $(tail -40 "$work/$name.build.log")"
  if grep -E "warning|error" "$work/$name.build.log"; then fail "compiler warnings"; fi
  binary="$skeleton/build/train_step"
else
  ${CXX:-c++} -std=c++17 -O0 -Wall -Wextra -Werror -x c++ -DDTPLAN_DRY_RUN_ONLY "$skeleton/train_step.cu" \
    -o "$work/$name.dry" || fail "host-only build failed"
  binary="$work/$name.dry"
fi

world=$("$tool" list | awk -v n="$name" '$1 == n { print $2 }')
"$binary" --dry-run --world "$world" >"$work/$name.layout" || fail "--dry-run failed"
"$tool" layout "$name" >"$work/$name.expected"
grep '^rank ' "$work/$name.layout" | diff "$work/$name.expected" - >"$work/$name.diff" ||
  fail "dry-run layout differs from planner::rank_layout: $(head -20 "$work/$name.diff")"
[ "$(grep -c '^rank ' "$work/$name.layout")" = "$world" ] || fail "expected $world rank lines"
if "$binary" --dry-run --world 0 >/dev/null 2>&1; then fail "--dry-run accepted a world of 0 ranks"; fi

if [ "$mode" = full ] && [ ! -e /dev/nvidia0 ]; then
  # No GPU here: the first CUDA call must fail through CUDA_CHECK, naming
  # the file, the line and the call, and the program must exit non-zero.
  if OMPI_COMM_WORLD_SIZE="$world" "$binary" --no-mpi >"$work/$name.run.out" 2>&1; then
    fail "train_step succeeded without a GPU"
  fi
  grep -Eq 'train_step\.cu:[0-9]+: cudaGetDeviceCount\(&devices\) failed: ' "$work/$name.run.out" ||
    fail "CUDA_CHECK message not found: $(cat "$work/$name.run.out")"
  if "$binary" --no-mpi >"$work/$name.run.out" 2>&1; then fail "a world of 1 rank was accepted"; fi
  grep -q "needs $world ranks, this job has 1" "$work/$name.run.out" || fail "world-size check: $(cat "$work/$name.run.out")"
fi
echo "ok [$name] ($mode)"
