#!/usr/bin/env bash
# Writes the fuzz targets' seed inputs under OUT (scripts/fuzz, and the
# replay tests of tests/fuzz/replay.sh):
#   make_seeds.sh OUT
# OUT/pipeline: every .dtp the repository holds (plans, the catalog, the
#   golden and codegen tests' inputs) and the programs the shell tests write
#   in here-documents (<<'DTP' ... DTP);
# OUT/jobs: each published and golden job behind the byte that picks its
#   format (0 torchtitan, 1 Megatron-LM, 2 DeepSpeed, 3 NeMo), then a NUL
#   and the file it names, where it names one.
set -euo pipefail
out=$(realpath -m "${1:?usage: make_seeds.sh OUT}")
cd "$(dirname "$0")/../.."

seeds=$out/pipeline
rm -rf "$seeds"
mkdir -p "$seeds"
n=0
while IFS= read -r f; do
  n=$((n + 1))
  cp "$f" "$seeds/file$n.dtp"
done < <(find plans planner/catalog tests -name '*.dtp' | sort)
for script in tests/cli/*.sh tests/codegen/*.sh; do
  awk -v out="$seeds/$(basename "$script" .sh)" '
    /<<.?DTP.?$/ { inside = 1; n++; next }
    inside && /^DTP$/ { inside = 0; next }
    inside { print > (out "-" n ".dtp") }' "$script"
done

job_seeds=$out/jobs
rm -rf "$job_seeds"
mkdir -p "$job_seeds"
n=0
job_seed() {  # FORMAT-BYTE JOB [RELATED]
  n=$((n + 1))
  { printf "\\$(printf '%03o' "$1")"; cat "$2"; if [ -n "${3:-}" ]; then printf '\0'; cat "$3"; fi; } \
    >"$job_seeds/job$n"
}
for f in $(find tests/data/published tests/golden/jobs -name '*.toml' | sort); do job_seed 0 "$f"; done
for f in $(find tests/golden/jobs -path '*megatron*' -name 'args.txt' | sort) $(find tests/data/published -name '*.args' | sort); do
  job_seed 1 "$f"
done
# Megatron-LM's launch scripts, read whole (their arrays expanded).
for f in $(find tests/data/published -path '*megatron_examples*' -name '*.sh' | sort); do job_seed 1 "$f"; done
for d in $(find tests/data/published tests/golden/jobs -name ds_config.json -exec dirname {} \; | sort); do
  job_seed 2 "$d/ds_config.json"
  if [ -f "$d/args.txt" ]; then job_seed 2 "$d/args.txt" "$d/ds_config.json"; fi
done
# A ds_config.json written for Hugging Face's Trainer: "auto" where the
# Trainer fills in its own arguments.
n=$((n + 1))
{ printf '\002'; cat <<'JSON'; } >"$job_seeds/job$n"
{"bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto"},
 "zero_optimization": {"stage": 3, "overlap_comm": true, "reduce_bucket_size": "auto",
  "stage3_prefetch_bucket_size": "auto", "stage3_param_persistence_threshold": "auto"},
 "gradient_accumulation_steps": "auto", "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto"}
JSON
# Megatron-DeepSpeed's launch script, whose here-document writes its ds_config.json.
for f in $(find tests/data/published -path '*megatron_deepspeed*' -name '*.sh' | sort); do job_seed 2 "$f"; done
for f in tests/data/published/mlperf_nemo_gpt3/config_DGXH100_*.sh; do
  job_seed 3 "$f" tests/data/published/mlperf_nemo_gpt3/config_common.sh
done
