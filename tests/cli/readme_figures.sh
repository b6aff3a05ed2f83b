# The README's table of published configurations states what dtplan
# predicts for each: every figure there is what dtplan prints today, to the
# digits the README shows (a change of the model that moves one changes the
# README with it).
source "$(dirname "$0")/lib.sh"

readme=README.md
published=tests/data/published

# check_figure ROW-MARKER NTH INPUT ARGS...: costs the job and compares its step
# with the NTH figure ('2.75 s', '712 ms') of the predicted column of the
# README row that contains ROW-MARKER.
check_figure() {
  local marker=$1 nth=$2
  shift 2
  checks=$((checks + 1))
  local row
  row=$(grep -F -- "$marker" "$readme" | head -1)
  [ -n "$row" ] || { fail "README has no row with '$marker'"; return; }
  local predicted
  predicted=$(printf '%s\n' "$row" | awk -F'|' '{print $4}')
  local figure
  figure=$(printf '%s\n' "$predicted" | grep -oE '[0-9]+(\.[0-9]+)? (s|ms)\b' | sed -n "${nth}p")
  [ -n "$figure" ] || { fail "README row '$marker' has no figure $nth in '$predicted'"; return; }
  local step
  step=$(timeout 60 "$DTPLAN" "$@" --format json 2>/dev/null | grep -o '"step_s": [0-9.e+-]*' | head -1 |
    awk '{print $2}')
  [ -n "$step" ] || { fail "'dtplan $*' printed no step"; return; }
  # The figure's value and half a unit of its last digit, in seconds.
  if ! awk -v fig="$figure" -v step="$step" 'BEGIN {
        split(fig, f, " "); scale = f[2] == "ms" ? 1e-3 : 1
        digits = index(f[1], ".") ? length(f[1]) - index(f[1], ".") : 0
        half = 0.5 * 10 ^ -digits * scale
        exit !((step - f[1] * scale) <= half + 1e-12 && (f[1] * scale - step) <= half + 1e-12) }'; then
    fail "README says $figure for '$marker' (figure $nth); dtplan predicts $step s"
  fi
}

check_figure 'torchtitan v0.2.0 `llama3_8b.toml`' 1 \
  "$published/torchtitan_llama3_8b.dtp" --from torchtitan "$published/torchtitan_llama3_8b.toml"
check_figure 'the same TOML with local batch 2' 1 \
  "$published/torchtitan_grand_teton.dtp" --from torchtitan "$published/torchtitan_llama3_8b.toml" \
  --set strategy.micro_batch=2 --set training.global_batch=256 --set training.attention_backend=flash
check_figure 'Megatron-LM core_v0.13.0 `examples/gpt3' 1 \
  "$published/megatron_gpt3_175b.dtp" --from megatron "$published/megatron_gpt3_175b.args"
check_figure "Megatron-LM's SC21 Table 1 jobs" 1 \
  "$published/megatron_sc21/selene_39b.dtp" --from megatron "$published/megatron_sc21/table1_39b.args"
check_figure "Megatron-LM's SC21 Table 1 jobs" 2 \
  "$published/megatron_sc21/selene_1_7b.dtp" --from megatron "$published/megatron_sc21/table1_1_7b.args"
check_figure 'Megatron-DeepSpeed `examples_deepspeed/pretrain_llama2' 1 \
  "$published/megatron_deepspeed_llama2/cluster.dtp" --from deepspeed "$published/megatron_deepspeed_llama2/args.txt"
check_figure "BigScience's BLOOM-176B job" 1 \
  "$published/bigscience_bloom_176b/cluster.dtp" --from deepspeed "$published/bigscience_bloom_176b/args.txt"
check_figure "NVIDIA's MLPerf Training v4.0 GPT-3 175B" 1 \
  "$published/mlperf_nemo_gpt3/cluster.dtp" --from nemo "$published/mlperf_nemo_gpt3/config_DGXH100_64x8x128x4x8_mbs2.sh" \
  --set training.global_batch=2304
check_figure "the submission's two other GPT-3 scripts" 1 \
  "$published/mlperf_nemo_gpt3/eos_dfw_1344.dtp" --from nemo \
  "$published/mlperf_nemo_gpt3/config_DGXH100_1344x8x6x4x6_mbs1_cg.sh"
check_figure "the submission's two other GPT-3 scripts" 2 \
  "$published/mlperf_nemo_gpt3/eos_dfw_1452.dtp" --from nemo \
  "$published/mlperf_nemo_gpt3/config_DGXH100_1452x8x6x4x6_mbs1_cg.sh"

finish
