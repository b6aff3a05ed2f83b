#!/bin/bash
# The launch kit as a cluster user runs it, with fake `srun`, `mpirun` and
# `cmake` on PATH that record their command lines:
#   launch.sh FIXTURE_TOOL WORKDIR
# - `sbatch ../launch/slurm.sbatch` from skeleton/ (as the README says) and
#   `sbatch launch/slurm.sbatch` from the bundle find the bundle, build it
#   once, and start the plan's ranks with srun --mpi=pmix (DTPLAN_SRUN_MPI),
#   --cpus-per-task passed on, the user's flags after train_step; 'none'
#   runs train_step --no-mpi with a per-job NCCL id file; the set-up hook and
#   the container image reach the build and the run; elsewhere it says where
#   to submit from;
# - launch/mpirun.sh HOSTFILE starts the plan's ranks with -x for NCCL_IB_HCA,
#   NCCL_IB_GID_INDEX, LD_LIBRARY_PATH and the rest, and refuses a
#   multi-host plan without a hostfile, usage on stderr;
# - an NVL72 plan starts one Slurm node per tray of 4 GPUs;
# - both pass bash -n and shellcheck (when installed).
set -euo pipefail

tool="$1"
work="$2/launch_kit"
rm -rf "$work"
mkdir -p "$work"
log="$work/calls.log"

# shellcheck source-path=SCRIPTDIR source=launch_lib.sh
source "$(dirname "$0")/launch_lib.sh"

bundle="$work/7b"
"$tool" emit 7b_2node "$bundle" >/dev/null 2>&1 || { echo "FAIL: emit"; exit 1; }
mkdir -p "$bundle/skeleton/build"
for script in "$bundle/launch/slurm.sbatch" "$bundle/launch/mpirun.sh"; do
  bash -n "$script" || fail "bash -n $script"
  if command -v shellcheck >/dev/null; then shellcheck "$script" || fail "shellcheck $script"; fi
done
command -v shellcheck >/dev/null || echo "note: shellcheck not installed; not run"

: >"$log"
sbatch "$bundle/skeleton" "$bundle/launch/slurm.sbatch" --steps 3 || fail "sbatch ../launch/slurm.sbatch from skeleton/"
expect "cmake -S $bundle/skeleton -B $bundle/skeleton/build -DCMAKE_BUILD_TYPE=Release"
expect "cmake --build $bundle/skeleton/build -j"
expect "srun --mpi=pmix --ntasks=16 --ntasks-per-node=8 --cpus-per-task=12 --cpu-bind=cores $bundle/skeleton/build/train_step --steps 3"
[ "$(grep -c '^srun' "$log")" = 1 ] || fail "srun ran more than once: $(cat "$log")"

# Built: no second build; from the bundle itself; srun's MPI plugin chosen.
: >"$log"
DTPLAN_SRUN_MPI=pmi2 sbatch "$bundle" "$bundle/launch/slurm.sbatch" || fail "sbatch launch/slurm.sbatch from the bundle"
if grep -q '^cmake' "$log"; then fail "rebuilt a built skeleton"; fi
expect "srun --mpi=pmi2 --ntasks=16 "

# Without MPI: --no-mpi and a per-job NCCL id file in the bundle.
: >"$log"
DTPLAN_SRUN_MPI=none sbatch "$bundle" "$bundle/launch/slurm.sbatch" || fail "DTPLAN_SRUN_MPI=none"
expect "srun --mpi=none --ntasks=16 --ntasks-per-node=8 --cpus-per-task=12 --cpu-bind=cores $bundle/skeleton/build/train_step --no-mpi"
expect "env DTPLAN_NCCL_ID_FILE=$bundle/skeleton/build/nccl_id.4242"

# The set-up hook is sourced; a container image goes to the build and the run.
rm -rf "$bundle/skeleton/build"
mkdir -p "$bundle/skeleton/build"
printf 'echo hook-ran >>"%s"\n' "$log" >"$work/setup.sh"
: >"$log"
DTPLAN_SETUP="$work/setup.sh" DTPLAN_CONTAINER_IMAGE=nvcr.io/nvidia/pytorch:24.05-py3 \
  sbatch "$bundle/skeleton" "$bundle/launch/slurm.sbatch" || fail "hook and container"
expect "hook-ran"
expect "srun --nodes=1 --ntasks=1 --container-image=nvcr.io/nvidia/pytorch:24.05-py3 --container-mounts=$bundle:$bundle --container-workdir=$bundle/skeleton cmake -S $bundle/skeleton"
expect "--cpu-bind=cores --container-image=nvcr.io/nvidia/pytorch:24.05-py3 --container-mounts=$bundle:$bundle --container-workdir=$bundle/skeleton $bundle/skeleton/build/train_step"

# Submitted from anywhere else: a clear error, nothing started.
: >"$log"
if sbatch "$work" "$bundle/launch/slurm.sbatch" 2>"$work/err"; then fail "submitted from outside the bundle"; fi
grep -q "submit from the bundle or its skeleton/ directory" "$work/err" || fail "message: $(cat "$work/err")"
if grep -q '^srun' "$log"; then fail "srun ran from outside the bundle"; fi

# mpirun.sh: the hostfile, the layout, the environment reaching remote ranks.
printf 'node1 slots=8\nnode2 slots=8\n' >"$work/hosts"
: >"$log"
(cd "$work" && NCCL_IB_HCA=mlx5_0,mlx5_1 NCCL_IB_GID_INDEX=3 LD_LIBRARY_PATH=/opt/nccl/lib \
  "$bundle/launch/mpirun.sh" hosts --layers 2) || fail "mpirun.sh hosts"
expect "mpirun -np 16 --hostfile hosts --map-by ppr:8:node --bind-to none"
for var in NCCL_IB_HCA NCCL_IB_GID_INDEX LD_LIBRARY_PATH PATH NCCL_DEBUG NCCL_SOCKET_IFNAME; do expect "-x $var "; done
expect "$bundle/skeleton/build/train_step --layers 2"
: >"$log"
if "$bundle/launch/mpirun.sh" --layers 2 >"$work/out" 2>"$work/err"; then fail "mpirun.sh ran 2 hosts without a hostfile"; fi
grep -q "^usage: " "$work/err" || fail "no usage on stderr: $(cat "$work/err")"
[ ! -s "$work/out" ] || fail "usage on stdout"
if grep -q '^mpirun' "$log"; then fail "mpirun started without a hostfile"; fi

# Two NVL72 racks: 36 Slurm nodes of 4 GPUs (trays), 144 ranks.
racks="$work/nvl72"
"$tool" emit nvl72 "$racks" >/dev/null 2>&1 || fail "emit nvl72"
mkdir -p "$racks/skeleton/build"
printf '#!/bin/bash\n' >"$racks/skeleton/build/train_step"
chmod +x "$racks/skeleton/build/train_step"
grep -q '^#SBATCH --nodes=36$' "$racks/launch/slurm.sbatch" || fail "NVL72: not 36 Slurm nodes"
grep -q '^#SBATCH --ntasks-per-node=4$' "$racks/launch/slurm.sbatch" || fail "NVL72: not 4 tasks a tray"
: >"$log"
sbatch "$racks/skeleton" "$racks/launch/slurm.sbatch" || fail "NVL72 sbatch"
expect "srun --mpi=pmix --ntasks=144 --ntasks-per-node=4 "
printf 'tray%s slots=4\n' $(seq 1 36) >"$work/trays"
: >"$log"
"$racks/launch/mpirun.sh" "$work/trays" || fail "NVL72 mpirun.sh"
expect "mpirun -np 144 --hostfile $work/trays --map-by ppr:4:node "

if [ "$failures" = 0 ]; then echo "ok: launch kit"; else exit 1; fi
