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
#   dry: the skeleton's host-only --dry-run build (g++ -O1 -DDTPLAN_DRY_RUN_ONLY: it
#   compiles as fast as -O0 and lays out 2,048 ranks ten times faster);
# - the --dry-run rank layout equals planner::rank_layout's, every
#   collective's communicator has the ranks the plan costs it over, and the
#   --dry-run --schedule listing is planner::one_f_one_b's: the same ops,
#   activations sent to the next stage and gradients to the previous one,
#   the planner's counts of slots, bubble and sends;
# - usage errors go to stderr; without a GPU the program fails at its first
#   CUDA call (after the world-size check), and as an MPI singleton it says so.
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
  ${CXX:-c++} -std=c++17 -O1 -Wall -Wextra -Werror -x c++ -DDTPLAN_DRY_RUN_ONLY "$skeleton/train_step.cu" \
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

# Gradients (and ZeRO's shards) sync over every dp and cp rank of the same
# weights: each rank's gradient group has dp x cp members.
awk '$1 == "#" && $2 == "plan" { for (i = 1; i < NF; ++i) { if ($i == "cp") cp = $(i + 1); if ($i == "dp") dp = $(i + 1) } }
     $1 == "rank" { n = 0; on = 0
       for (i = 1; i <= NF; ++i) { if ($i == "|") on = 0; else if (on) ++n; if ($i == "grad:") on = 1 }
       if (n != dp * cp) { print "rank " $2 " has " n " in its gradient group, dp x cp = " dp * cp; bad = 1; exit } }
     END { exit bad }' "$work/$tag.layout" >"$work/$tag.grad.err" || fail "$(cat "$work/$tag.grad.err")"

# Each collective runs on a communicator of the ranks the plan costs it over.
grep '^comm ' "$work/$tag.layout" >"$work/$tag.comms" || true
[ "$(wc -l <"$work/$tag.comms")" = "$("$tool" comms "$name" | wc -l)" ] || fail "--dry-run lists another number of collectives"
# (A pipeline send/recv is costed between two neighbouring stages of the pp group.)
awk '{ for (i = 1; i < NF; ++i) { if ($i == "ranks") r = $(i + 1); if ($i == "members") m = $(i + 1); if ($i == "group") g = $(i + 1) }
       if (r != m && !($3 == "send-recv" && g == "pp" && r == 2)) { print "collective " $2 " " $3 " over " r " ranks runs on " m; bad = 1 } }
     END { exit bad }' "$work/$tag.comms" >"$work/$tag.comms.err" ||
  fail "communicator sizes: $(cat "$work/$tag.comms.err")"

# The pipeline schedule is the planner's, op by op.
"$binary" --dry-run --schedule >"$work/$tag.schedule.out" || fail "--dry-run --schedule failed"
grep -E '^(schedule|stage|op|issue) ' "$work/$tag.schedule.out" >"$work/$tag.schedule" || fail "no schedule printed"
"$tool" schedule "$name" >"$work/$tag.schedule.expected"
diff "$work/$tag.schedule.expected" "$work/$tag.schedule" >"$work/$tag.schedule.diff" ||
  fail "--dry-run --schedule differs from planner::one_f_one_b: $(head -20 "$work/$tag.schedule.diff")"
# Read as an NCCL engineer would: directions, and the counts the planner gives.
awk '
  $1 == "schedule" { pp = $3; v = $5; m = $7; slots = $9; idle = $13; pairs = $15; sends = $17 }
  $1 == "stage" { want_f[$2] = $8; want_b[$2] = $10 }
  $1 == "op" {
    st = $2; pass = $4; send = $12; recv = $10; ++ops[st]
    if (send != "-") {
      if (pass == "forward") { ++fwd[st]; if (send != (st + 1) % pp) { print "forward send from " st " to " send; bad = 1 } }
      else { ++bwd[st]; ++total_bwd; if (send != (st + pp - 1) % pp) { print "backward send from " st " to " send; bad = 1 } }
      ++total
    }
    if (recv != "-" && pass == "forward" && recv != (st + pp - 1) % pp) { print "forward recv on " st " from " recv; bad = 1 }
    if (recv != "-" && pass == "backward" && recv != (st + 1) % pp) { print "backward recv on " st " from " recv; bad = 1 }
  }
  END {
    for (st = 0; st < pp; ++st) {
      if (ops[st] != slots || ops[st] != 2 * m * v) { print "stage " st " has " ops[st] " ops, not " slots; bad = 1 }
      if (fwd[st] + 0 != want_f[st] || bwd[st] + 0 != want_b[st]) { print "stage " st " send counts"; bad = 1 }
    }
    if (total != sends || total != 2 * m * (pp * v - 1)) { print total " sends, planner " sends; bad = 1 }
    if (idle != 3 * (pp - 1) || pairs != pp - 1) { print "bubble " idle " units, " pairs " pairs for pp " pp; bad = 1 }
    if (pp > 1 && total_bwd == 0) { print "no gradient goes back to a previous stage"; bad = 1 }
    exit bad
  }' "$work/$tag.schedule" >"$work/$tag.schedule.err" || fail "schedule: $(head -5 "$work/$tag.schedule.err")"

# Usage errors: the usage on stderr, nothing on stdout, status 2.
set +e
"$binary" --bogus >"$work/$tag.usage.out" 2>"$work/$tag.usage.err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "an unknown option exited $rc"
[ ! -s "$work/$tag.usage.out" ] || fail "usage on stdout for an unknown option"
grep -q '^usage: ' "$work/$tag.usage.err" || fail "no usage on stderr"

if [ "$mode" = full ] && [ ! -e /dev/nvidia0 ]; then
  # No GPU here: the first CUDA call must fail through CUDA_CHECK, naming
  # the file, the line and the call, and the program must exit non-zero.
  if SLURM_JOB_ID=1 OMPI_COMM_WORLD_SIZE="$world" "$binary" --no-mpi >"$work/$tag.run.out" 2>&1; then
    fail "train_step succeeded without a GPU"
  fi
  grep -Eq 'train_step\.cu:[0-9]+: cudaGetDeviceCount\(&devices\) failed: ' "$work/$tag.run.out" ||
    fail "CUDA_CHECK message not found: $(cat "$work/$tag.run.out")"
  # --no-mpi names its NCCL id file after the job, and says so without one.
  if env -u SLURM_JOB_ID -u PMIX_NAMESPACE -u OMPI_MCA_ess_base_jobid -u DTPLAN_JOB_ID -u DTPLAN_NCCL_ID_FILE \
    OMPI_COMM_WORLD_SIZE="$world" "$binary" --no-mpi >"$work/$tag.run.out" 2>&1; then
    fail "--no-mpi ran without a job to name its NCCL id file after"
  fi
  grep -q "needs a file to share the NCCL id through" "$work/$tag.run.out" || fail "id file: $(cat "$work/$tag.run.out")"
  if "$binary" --no-mpi >"$work/$tag.run.out" 2>&1; then fail "a world of 1 rank was accepted"; fi
  grep -q "needs $world ranks, this job has 1" "$work/$tag.run.out" || fail "world-size check: $(cat "$work/$tag.run.out")"
  if grep -q DTPLAN_HAVE_MPI "$skeleton/build/CMakeFiles/train_step.dir/flags.make" 2>/dev/null; then
    # Started without a launcher: an MPI singleton, told so before any GPU call.
    if (cd "$work" && env -u OMPI_COMM_WORLD_SIZE -u SLURM_STEP_ID -u PMI_SIZE -u PMIX_RANK \
        timeout 60 "$binary") >"$work/$tag.singleton.out" 2>&1; then
      fail "an MPI singleton was accepted"
    fi
    grep -q "an MPI singleton, started without a launcher" "$work/$tag.singleton.out" ||
      fail "singleton message: $(head -5 "$work/$tag.singleton.out")"
  fi
fi
echo "ok [$name] ($mode)"
