#!/bin/bash
# Generated files are data, not code (issue 16): bundles from a hostile file
# path (through the CLI) and from hostile plan, model, cluster and GPU names
# (the in-memory fixture `hostile`), each payload one that would create a
# file pwn_* in the working directory if it ran:
#   hostile.sh DTPLAN FIXTURE_TOOL SOURCE_DIR WORKDIR
# For each bundle: bash -n and shellcheck the scripts, run them under fake
# srun/mpirun/cmake, configure the skeleton with CMake, compile it (the
# host-only --dry-run build, and the CUDA program with nvcc where there is
# one), run --dry-run and --dry-run --schedule (whose output must hold no
# control character), and find no pwn_* file anywhere.
set -euo pipefail

dtplan="$1"
tool="$2"
source_dir="$3"
work="$4/hostile"
rm -rf "$work"
mkdir -p "$work/run"
log="$work/calls.log"
# shellcheck source-path=SCRIPTDIR source=launch_lib.sh
source "$(dirname "$0")/launch_lib.sh"

# Every command below runs in $work/run: a payload would leave pwn_* there
# (or in the bundle, or anywhere under $work).
payload=$'evil"\'`touch pwn_tick`$(touch pwn_subst)\n touch pwn_nl\r\nfile(WRITE pwn_cmake x)\nstatic int pwn = std::system("touch pwn_cc"); /* */ \\ \e[31m \xc3\xa9 ??/'
hostile_dir="$work/x*/$payload"
mkdir -p "$hostile_dir"
cp "$source_dir/plans/7b_2node.dtp" "$hostile_dir/plan.dtp"
cd "$work/run"
"$dtplan" "$hostile_dir/plan.dtp" --strategy current --emit "$work/from_path" >/dev/null 2>"$work/emit.err" ||
  fail "dtplan --emit from a hostile path: $(cat "$work/emit.err")"
"$tool" emit hostile "$work/from_names" >/dev/null 2>"$work/emit.err" || fail "emit the hostile fixture: $(cat "$work/emit.err")"

nvcc=""
if command -v nvcc >/dev/null; then nvcc=nvcc; elif [ -x /usr/local/cuda/bin/nvcc ]; then nvcc=/usr/local/cuda/bin/nvcc; fi

for bundle in "$work/from_path" "$work/from_names"; do
  name="$(basename "$bundle")"
  [ -s "$bundle/skeleton/train_step.cu" ] || { fail "$name: no bundle"; continue; }
  for script in "$bundle/launch/slurm.sbatch" "$bundle/launch/mpirun.sh"; do
    bash -n "$script" || fail "$name: bash -n $(basename "$script")"
    if command -v shellcheck >/dev/null; then shellcheck "$script" || fail "$name: shellcheck $(basename "$script")"; fi
  done
  # The generated files are printable ASCII, one statement per line.
  if LC_ALL=C grep -n $'[\x01-\x08\x0b-\x1f\x7f-\xff]' "$bundle/skeleton/train_step.cu" "$bundle/skeleton/CMakeLists.txt" \
    "$bundle/launch/slurm.sbatch" "$bundle/launch/mpirun.sh" >"$work/$name.bytes"; then
    fail "$name: control or non-ASCII bytes: $(head -3 "$work/$name.bytes")"
  fi

  # The scripts, run as a user would (the fakes build and launch nothing).
  mkdir -p "$bundle/skeleton/build"
  sbatch "$bundle/skeleton" "$bundle/launch/slurm.sbatch" >/dev/null 2>&1 || fail "$name: slurm.sbatch"
  printf 'node1 slots=8\nnode2 slots=8\n' >"$work/hosts"
  "$bundle/launch/mpirun.sh" "$work/hosts" >/dev/null 2>&1 || fail "$name: mpirun.sh"
  rm -rf "$bundle/skeleton/build"

  # CMake reads the whole CMakeLists.txt (and runs what it finds) before
  # project() needs CUDA: configure, and insist on success only with nvcc.
  if PATH="${PATH#"$work/bin:"}" cmake -S "$bundle/skeleton" -B "$bundle/skeleton/build" -DCMAKE_CUDA_ARCHITECTURES=90 \
    >"$work/$name.configure.log" 2>&1; then :; elif [ -n "$nvcc" ]; then
    fail "$name: cmake configure: $(tail -5 "$work/$name.configure.log")"
  fi

  ${CXX:-c++} -std=c++17 -O0 -Wall -Wextra -Werror -x c++ -DDTPLAN_DRY_RUN_ONLY "$bundle/skeleton/train_step.cu" \
    -o "$work/$name.dry" 2>"$work/$name.cxx.log" || fail "$name: host-only build: $(head -5 "$work/$name.cxx.log")"
  if [ -x "$work/$name.dry" ]; then
    "$work/$name.dry" --dry-run --schedule >"$work/$name.out" 2>&1 || fail "$name: --dry-run --schedule"
    if LC_ALL=C grep -n $'[\x01-\x08\x0b-\x1f\x7f]' "$work/$name.out" >"$work/$name.ctrl"; then
      fail "$name: control characters in --dry-run: $(head -3 "$work/$name.ctrl")"
    fi
  fi
  if [ -n "$nvcc" ]; then
    "$nvcc" -std=c++17 -arch=sm_90 -O0 -c "$bundle/skeleton/train_step.cu" -o "$work/$name.o" >"$work/$name.nvcc.log" 2>&1 ||
      fail "$name: nvcc: $(head -5 "$work/$name.nvcc.log")"
  else
    echo "note: nvcc not found; the CUDA program of $name not compiled"
  fi
done

found="$(find "$work" -name 'pwn_*' 2>/dev/null | head -5)"
[ -z "$found" ] || fail "a payload ran: $found"
if [ "$failures" = 0 ]; then echo "ok: hostile paths and names stay data"; else exit 1; fi
# The line scripts/test-all counts: this test built its CUDA programs with nvcc.
if [ -n "$nvcc" ]; then echo "ok [hostile] (full)"; else echo "ok [hostile] (dry)"; fi
