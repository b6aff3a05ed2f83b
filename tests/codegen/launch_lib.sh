# shellcheck shell=bash
# shellcheck disable=SC2154  # $work and $log come from the script that sources this
# Sourced by the launch tests (launch.sh, hostile.sh): `fail MESSAGE`, which
# counts into $failures; `expect TEXT`, a line of $log containing TEXT; and
# fake `srun`, `mpirun` and `cmake` in
# $work/bin, first on PATH, that append their command lines to $log (one
# line each; DTPLAN_NCCL_ID_FILE as a line of its own when set); `cmake
# --build DIR` leaves an executable DIR/train_step, as the real build would.
# Needs $work and $log; defines sbatch DIR SCRIPT [ARGS], which runs SCRIPT
# as sbatch does: a copy in a spool directory, run from DIR with
# SLURM_SUBMIT_DIR set.
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
expect() {
  grep -qF -- "$1" "$log" || fail "no call with '$1' in: $(cat "$log")"
}

mkdir -p "$work/bin" "$work/spool"
for fake_cmd in srun mpirun; do
  cat >"$work/bin/$fake_cmd" <<FAKE
#!/bin/bash
{ printf '%s' "$fake_cmd"; printf ' %s' "\$@"; printf '\\n'; [ -z "\${DTPLAN_NCCL_ID_FILE:-}" ] || echo "env DTPLAN_NCCL_ID_FILE=\$DTPLAN_NCCL_ID_FILE"; } >>"$log"
FAKE
done
cat >"$work/bin/cmake" <<FAKE
#!/bin/bash
{ printf 'cmake'; printf ' %s' "\$@"; printf '\\n'; } >>"$log"
if [ "\$1" = --build ]; then printf '#!/bin/bash\\n' >"\$2/train_step"; chmod +x "\$2/train_step"; fi
FAKE
chmod +x "$work/bin/srun" "$work/bin/mpirun" "$work/bin/cmake"
PATH="$work/bin:$PATH"
export PATH

sbatch() {
  local dir="$1" script="$2"
  shift 2
  cp "$script" "$work/spool/slurm_script"
  (cd "$dir" && SLURM_SUBMIT_DIR="$dir" SLURM_JOB_ID=4242 SLURM_CPUS_PER_TASK=12 bash "$work/spool/slurm_script" "$@")
}
