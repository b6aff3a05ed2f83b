# Plans as the user's framework runs them: --emit DIR writes DIR/<framework>/
# for the framework the training block names or --framework names, refuses a
# plan the framework cannot run with its reason (writing nothing), and --from
# reads a job back, reporting its unread keys at their place in its file.
source "$(dirname "$0")/lib.sh"

plan=plans/7b_2node.dtp

# --framework needs --emit and one of three names; --from needs both words.
expect_status 2 "$DTPLAN" "$plan" --framework megatron
expect_contains "$TMP/err" "dtplan: error: --framework only applies to --emit DIR"
expect_status 2 "$DTPLAN" "$plan" --emit "$TMP/x" --framework nemo
expect_contains "$TMP/err" "dtplan: error: --framework needs 'torchtitan', 'megatron' or 'deepspeed'"
expect_status 2 "$DTPLAN" "$plan" --from megatron
expect_contains "$TMP/err" "dtplan: error: --from megatron needs the job's file"
expect_status 2 "$DTPLAN" "$plan" --from fsdp job.toml
expect_contains "$TMP/err" "dtplan: error: --from needs 'torchtitan', 'megatron', 'deepspeed' or 'nemo', then the job's file"
expect_status 2 "$DTPLAN" "$plan" --from torchtitan "$TMP/none.toml"
expect_contains "$TMP/err" "dtplan: error: cannot read '$TMP/none.toml'"

# The training block's framework is the default; --framework another.
expect_status 0 "$DTPLAN" "$plan" --strategy current --set training.framework=deepspeed --emit "$TMP/ds" --quiet
for f in deepspeed/ds_config.json deepspeed/args.txt deepspeed/launch.sh plan.json; do
  checks=$((checks + 1))
  [ -s "$TMP/ds/$f" ] || fail "missing $f"
done
checks=$((checks + 1))
[ -x "$TMP/ds/deepspeed/launch.sh" ] && [ ! -x "$TMP/ds/deepspeed/args.txt" ] || fail "only launch.sh is executable"
expect_contains "$TMP/ds/deepspeed/ds_config.json" '"train_batch_size": 256,'
expect_contains "$TMP/ds/deepspeed/launch.sh" "exec deepspeed \"\${hostfile[@]}\" --num_nodes 2 --num_gpus 8"
expect_status 0 "$DTPLAN" "$plan" --strategy current --emit "$TMP/mg" --framework megatron --quiet
expect_contains "$TMP/mg/megatron/args.txt" "--use-distributed-optimizer"
checks=$((checks + 1))
[ ! -e "$TMP/mg/torchtitan" ] && [ ! -e "$TMP/mg/deepspeed" ] || fail "another framework's job was written"
# The plan's training block names megatron: its job, and no other.
expect_status 0 "$DTPLAN" "$plan" --strategy current --emit "$TMP/named" --quiet
expect_contains "$TMP/named/megatron/args.txt" "--use-distributed-optimizer"
checks=$((checks + 1))
[ ! -e "$TMP/named/torchtitan" ] && [ ! -e "$TMP/named/deepspeed" ] || fail "a job for a framework the plan does not name"
# A generic plan names no framework dtplan writes jobs for: no job.
expect_status 0 "$DTPLAN" "$plan" --set training.framework=generic --strategy current --emit "$TMP/plain" --quiet
checks=$((checks + 1))
[ ! -e "$TMP/plain/megatron" ] && [ ! -e "$TMP/plain/torchtitan" ] && [ ! -e "$TMP/plain/deepspeed" ] || fail "a job without a framework"

# torchtitan has no ZeRO-1: refused with the reason, nothing written.
expect_status 2 "$DTPLAN" "$plan" --strategy current --emit "$TMP/tt" --framework torchtitan --quiet
expect_contains "$TMP/err" "error: cannot write plan 'current' as a torchtitan job: torchtitan does not run ZeRO-1 (zero = 1): it runs zero = 0 or 3"
checks=$((checks + 1))
[ ! -e "$TMP/tt" ] || fail "a refused bundle was written"

# bf16 without ZeRO is DeepSpeed's BF16_Optimizer, which shards the
# optimizer state: a zero = 0 plan is refused for DeepSpeed, with the reason.
expect_status 2 "$DTPLAN" "$plan" --strategy current --set strategy.zero=0 --set strategy.dp=2 --set strategy.tp=8 \
  --emit "$TMP/z0" --framework deepspeed --quiet
expect_contains "$TMP/err" "error: cannot write plan 'current' as a deepspeed job: deepspeed runs bf16 with ZeRO-1 at least; the plan has zero = 0"
checks=$((checks + 1))
[ ! -e "$TMP/z0" ] || fail "a refused bundle was written"

# The framework's limit (bf16_min_zero) in the check and the search.
expect_status 1 "$DTPLAN" "$plan" --set training.framework=deepspeed --set strategy.zero=0 --strategy current
expect_contains "$TMP/err" "error: framework 'deepspeed' runs bf16 with ZeRO stage 1 at least, not zero = 0"
expect_status 0 "$DTPLAN" "$plan" --set training.framework=deepspeed --optimize --explain --top 3
expect_contains "$TMP/out" "framework 'deepspeed' does not run ZeRO below stage 1 in bf16: left out of the space"

# Megatron-LM v2 (megatron_v2) ran neither sequence parallelism nor selective
# recomputation: the check says so at the key that asks, the search leaves
# them out, and with tensor parallelism its plans keep sequence_parallel off.
expect_status 1 "$DTPLAN" "$plan" --set training.framework=megatron_v2 --set strategy.zero=0 --set strategy.tp=8 \
  --set strategy.dp=2 --set strategy.checkpoint=full --set strategy.sequence_parallel=true --strategy current
expect_contains "$TMP/err" "<--set>:1:10: error: framework 'megatron_v2' does not run sequence parallelism (sequence_parallel = true)"
expect_status 0 "$DTPLAN" "$plan" --set training.framework=megatron_v2 --set strategy.zero=0 --set strategy.tp=8 \
  --set strategy.dp=2 --set strategy.checkpoint=full --strategy current --quiet
expect_contains "$TMP/out" "current: valid"
expect_status 0 "$DTPLAN" "$plan" --set training.framework=megatron_v2 --set strategy.tp=8 --optimize --explain --top 3
expect_contains "$TMP/out" "framework 'megatron_v2' does not run sequence parallelism: left out of the space"
expect_contains "$TMP/out" "framework 'megatron_v2' does not run every checkpoint mode (only none, full): left out of the space"
grep -A1 "^plan 'search" "$TMP/out" >"$TMP/searched"
expect_contains "$TMP/searched" "tp 8, pp 1, cp 1, zero 0"
expect_lacks "$TMP/searched" "sequence_parallel true"
expect_lacks "$TMP/searched" "checkpoint selective"

# torchtitan's limits in the check and the search: DDP (zero = 0) is 1-D,
# tensor parallelism always comes with sequence parallelism, and its
# selective checkpointing is not Megatron's core-attention recomputation.
tt=(--set training.framework=torchtitan --set strategy.checkpoint=full)
expect_status 1 "$DTPLAN" plans/1b_1node.dtp "${tt[@]}" --set strategy.zero=0 --set strategy.tp=2 --set strategy.dp=4 \
  --strategy data_parallel
expect_contains "$TMP/err" "error: framework 'torchtitan' replicates with zero = 0 only without tensor, pipeline or context parallelism (tp = 2, pp = 1, cp = 1)"
expect_status 1 "$DTPLAN" plans/1b_1node.dtp "${tt[@]}" --set strategy.zero=3 --set strategy.tp=2 --set strategy.dp=4 \
  --set strategy.sequence_parallel=false --strategy data_parallel
expect_contains "$TMP/err" "error: framework 'torchtitan' does not run tensor parallelism without sequence parallelism (sequence_parallel = false)"
expect_status 0 "$DTPLAN" plans/1b_1node.dtp --set training.framework=torchtitan --optimize --top 8 --explain
expect_contains "$TMP/out" "framework 'torchtitan' does not run every checkpoint mode (only none, full, ops): left out of the space"
grep -A1 "^plan 'search" "$TMP/out" >"$TMP/searched"
expect_contains "$TMP/searched" "tp 2, pp 1, cp 1, zero 3"
expect_lacks "$TMP/searched" "tp 2, pp 1, cp 1, zero 0"
expect_lacks "$TMP/searched" "checkpoint selective"
sp=(--set search.sequence_parallel=auto --set search.tp=2 --optimize --top 8)
expect_status 0 "$DTPLAN" plans/1b_1node.dtp --set training.framework=torchtitan "${sp[@]}" --explain
expect_contains "$TMP/out" "framework 'torchtitan' does not run tensor parallelism without sequence parallelism: left out of the space"
grep -A1 "^plan 'search" "$TMP/out" >"$TMP/searched"
expect_lacks "$TMP/searched" "sequence_parallel false"
expect_status 0 "$DTPLAN" plans/1b_1node.dtp --set training.framework=megatron "${sp[@]}"
grep -A1 "^plan 'search" "$TMP/out" >"$TMP/searched"
expect_contains "$TMP/searched" "sequence_parallel false"

# torchtitan splits the layers into ceil(layers / layers_per_stage) stages,
# the first a layer more where they do not divide: 32 layers over 12 chunks
# is no such split. The check says so for a torchtitan plan; the export for
# another framework's plan written as a torchtitan job.
ttu=(--strategy current --set current.zero=3 --set current.pp=4 --set current.virtual_stages=3 --set current.dp=4
  --set current.checkpoint=full)
expect_status 1 "$DTPLAN" "$plan" "${ttu[@]}" --set training.framework=torchtitan
expect_contains "$TMP/err" "<--set>:1:9: error: framework 'torchtitan' splits the layers into stages of one size, ceil(layers / size) of them: none gives 32 layers over 12 pipeline chunks (pp x virtual_stages = 4 x 3; 3 a stage makes 11)"
expect_status 2 "$DTPLAN" "$plan" "${ttu[@]}" --set training.framework=generic --emit "$TMP/ttu" --framework torchtitan
expect_contains "$TMP/err" "error: cannot write plan 'current' as a torchtitan job: torchtitan makes ceil(32 layers / pipeline_parallel_layers_per_stage) stages: no size gives the 12 pipeline chunks (pp x virtual_stages = 4 x 3; 3 a stage makes 11)"

# DeepSpeed's contiguous_gradients (its ZeRO-1/2 reduce buckets) travels
# both ways in ds_config.json.
expect_status 0 "$DTPLAN" "$plan" --strategy current --set training.framework=deepspeed \
  --set training.contiguous_gradients=false --emit "$TMP/cg" --quiet
expect_contains "$TMP/cg/deepspeed/ds_config.json" '"contiguous_gradients": false,'
expect_status 0 "$DTPLAN" "$plan" --from deepspeed "$TMP/cg/deepspeed/args.txt" --dump ir
expect_contains "$TMP/out" "  contiguous_gradients false"
expect_status 0 "$DTPLAN" "$plan" --set training.framework=deepspeed --dump ir
expect_contains "$TMP/out" "  contiguous_gradients true"

# train_batch_size, the micro-batch and the accumulation written together
# multiply out on the data-parallel ranks, or DeepSpeed refuses the job
# (v0.17.5 runtime/config.py:870-885).
sed 's/"gradient_accumulation_steps": 16,/"gradient_accumulation_steps": 12,/' "$TMP/cg/deepspeed/ds_config.json" \
  >"$TMP/cg/deepspeed/ds_config.json.new" && mv "$TMP/cg/deepspeed/ds_config.json.new" "$TMP/cg/deepspeed/ds_config.json"
expect_status 2 "$DTPLAN" "$plan" --from deepspeed "$TMP/cg/deepspeed/args.txt" --quiet
expect_contains "$TMP/err" "ds_config.json:4:34: error: DeepSpeed refuses this batch: train_batch_size 256 is not train_micro_batch_size_per_gpu 1 x gradient_accumulation_steps 12 x the 16 data-parallel ranks"

# NVFP4 (B200's fp4 tensor cores): Megatron-LM says --fp4-format e2m1 and
# reads it back as fp4; DeepSpeed and torchtitan's TOML cannot say it.
fp4=(--set model.precision=fp4 --set cluster.gpu=B200 --strategy current)
expect_status 0 "$DTPLAN" "$plan" "${fp4[@]}" --emit "$TMP/fp4" --framework megatron --quiet
expect_contains "$TMP/fp4/megatron/args.txt" "--fp4-format e2m1"
expect_contains "$TMP/fp4/megatron/args.txt" "--fp4-recipe nvfp4"
expect_status 0 "$DTPLAN" "$plan" --set cluster.gpu=B200 --from megatron "$TMP/fp4/megatron/args.txt" --quiet
expect_contains "$TMP/out" "megatron: valid"
expect_status 0 "$DTPLAN" "$plan" --set cluster.gpu=B200 --from megatron "$TMP/fp4/megatron/args.txt" --dump ir
expect_contains "$TMP/out" "  precision         fp4"
expect_status 2 "$DTPLAN" "$plan" "${fp4[@]}" --emit "$TMP/fp4ds" --framework deepspeed
expect_contains "$TMP/err" "error: cannot write plan 'current' as a deepspeed job: Megatron-DeepSpeed trains in bf16, fp16 or fp32, not fp4"
expect_status 2 "$DTPLAN" "$plan" "${fp4[@]}" --set training.framework=torchtitan --set current.zero=3 \
  --set current.checkpoint=full --emit "$TMP/fp4tt"
expect_contains "$TMP/err" "error: cannot write plan 'current' as a torchtitan job: torchtitan's NVFP4 converter (experimental, from 2026; torchtitan/components/quantization/nvfp4.py) is set in its Python configs, which this TOML job cannot name; its TOML quantizes to float8 (precision = fp8)"
# On a GPU without fp4 tensor cores the job is refused where it says fp4.
expect_status 2 "$DTPLAN" "$plan" --from megatron "$TMP/fp4/megatron/args.txt" --quiet
expect_contains "$TMP/err" "args.txt:"
expect_contains "$TMP/err" "error: precision = fp4 needs a GPU with fp4 tensor cores; gpu 'H100_SXM' has none (it sets no peak_flops_fp4)"

# Read back: the same strategy and step, no warning.
expect_status 0 "$DTPLAN" "$plan" --from megatron "$TMP/mg/megatron/args.txt" --quiet
expect_contains "$TMP/out" "megatron: valid, 7.90 s per step"
checks=$((checks + 1))
[ ! -s "$TMP/err" ] || fail "warnings reading back an exported job: $(cat "$TMP/err")"
expect_status 0 "$DTPLAN" "$plan" --strategy current --quiet
expect_contains "$TMP/out" "current: valid, 7.90 s per step"

# Megatron's timers (timing_log_level) travel both ways as --timing-log-level.
expect_status 0 "$DTPLAN" "$plan" --strategy current --set training.timing_log_level=2 --emit "$TMP/tl" \
  --framework megatron --quiet
expect_contains "$TMP/tl/megatron/args.txt" "--timing-log-level 2"
expect_status 0 "$DTPLAN" "$plan" --from megatron "$TMP/tl/megatron/args.txt" --dump ir
expect_contains "$TMP/out" "  timing_log_level  2"
expect_status 0 "$DTPLAN" "$plan" --dump ir
expect_contains "$TMP/out" "  timing_log_level  0"

# Megatron's own layers (transformer_impl = local) travel as --transformer-impl.
expect_status 0 "$DTPLAN" "$plan" --strategy current --set training.transformer_impl=local --emit "$TMP/ti" \
  --framework megatron --quiet
expect_contains "$TMP/ti/megatron/args.txt" "--transformer-impl local"
expect_status 0 "$DTPLAN" "$plan" --from megatron "$TMP/ti/megatron/args.txt" --dump ir
expect_contains "$TMP/out" "  transformer_impl  local"

# A key dtplan does not read is a warning at its place in the job's file;
# a bad value an error there; --set still has the last word.
printf '%s\n' '[training]' 'local_batch_size = 1' 'seq_len = 4096' 'steps = 10' '[parallelism]' \
  'data_parallel_shard_degree = 16' '[activation_checkpoint]' 'mode = "full"' >"$TMP/job.toml"
expect_status 0 "$DTPLAN" "$plan" --from torchtitan "$TMP/job.toml"
expect_contains "$TMP/err" "$TMP/job.toml:4:1: warning: torchtitan's 'training.steps' is not read: it does not change a step's time or memory"
expect_contains "$TMP/out" "strategy 'torchtitan'  [valid]"
expect_contains "$TMP/out" "dp 16, tp 1, pp 1, cp 1, zero 3, shard all, checkpoint full, micro_batch 1"
expect_status 0 "$DTPLAN" "$plan" --from torchtitan "$TMP/job.toml" --set torchtitan.checkpoint=none --quiet
expect_contains "$TMP/out" "torchtitan: valid"
# Two --quiet lines (plan: figures) give the same figures, whatever the
# plans are called.
expect_same_cost() {
  checks=$((checks + 1))
  [ "$(sed 's/^[^:]*://' "$1")" = "$(sed 's/^[^:]*://' "$2")" ] || fail "$3: $(cat "$1") against $(cat "$2")"
}

# torchtitan counts the embedding and the output as a layer each when it
# splits a pipeline (pipeline_parallel_first/last_stage_less_layers, 1 by
# default), the first stages a layer more where they do not divide: read as
# the training block's two keys (32 + 2 over 2: 16 and 16; over 4: 8, 9, 8,
# 7); written 0, dtplan's split; more than 1, which dtplan cannot say, a
# warning.
printf '%s\n' '[training]' 'local_batch_size = 8' 'seq_len = 4096' '[parallelism]' 'data_parallel_shard_degree = 8' \
  'pipeline_parallel_degree = 2' >"$TMP/tt_pp2.toml"
expect_status 0 "$DTPLAN" "$plan" --from torchtitan "$TMP/tt_pp2.toml" --dump ir
expect_contains "$TMP/out" "  account_for_embedding_in_pipeline_split true"
expect_contains "$TMP/out" "  account_for_loss_in_pipeline_split true"
expect_lacks "$TMP/err" "counts the embedding"
sed 's/data_parallel_shard_degree = 8/data_parallel_shard_degree = 4/; s/pipeline_parallel_degree = 2/pipeline_parallel_degree = 4/' \
  "$TMP/tt_pp2.toml" >"$TMP/tt_pp4.toml"
expect_status 0 "$DTPLAN" "$plan" --from torchtitan "$TMP/tt_pp4.toml"
expect_lacks "$TMP/err" "counts the embedding"
expect_contains "$TMP/out" "  layers 8 on stage 0, 9 on stage 1, 8 on stage 2, 7 on stage 3"
expect_contains "$TMP/out" "strategy 'torchtitan'  [valid]"
# And written back: a torchtitan plan counting them over 4 stages of 32
# layers exports 9 a stage less 1 at each end, and reads back at its cost.
expect_status 0 "$DTPLAN" "$plan" --strategy current --set training.framework=torchtitan --set current.zero=3 \
  --set current.pp=4 --set current.dp=4 --set current.checkpoint=full \
  --set training.account_for_embedding_in_pipeline_split=true --set training.account_for_loss_in_pipeline_split=true \
  --emit "$TMP/tt_counted" --quiet
cp "$TMP/out" "$TMP/tt_counted_planned"
expect_contains "$TMP/tt_counted/torchtitan/job.toml" "pipeline_parallel_layers_per_stage = 9"
expect_contains "$TMP/tt_counted/torchtitan/job.toml" "pipeline_parallel_first_stage_less_layers = 1"
expect_contains "$TMP/tt_counted/torchtitan/job.toml" "pipeline_parallel_last_stage_less_layers = 1"
expect_status 0 "$DTPLAN" "$plan" --from torchtitan "$TMP/tt_counted/torchtitan/job.toml" --quiet
expect_lacks "$TMP/err" "warning"
expect_same_cost "$TMP/out" "$TMP/tt_counted_planned" "torchtitan's counted split read back costs otherwise"
# A plan costed on torchtitan's rule (34 over 4: 8, 9, 8, 7) is no
# Megatron-LM job: Megatron-Core asserts the count divides.
cat >"$TMP/mine.dtp" <<'EOF'
model m : llama2_7b { }
cluster c { nodes = 2; gpus_per_node = 8; gpu = H100_SXM; inter_node = 400 GB/s }
framework mine : torchtitan { zero_stages = {0, 1, 3} }
training {
  framework = mine
  global_batch = 64
  account_for_embedding_in_pipeline_split = true
  account_for_loss_in_pipeline_split = true
}
strategy s { pp = 4; dp = 4; zero = 1; checkpoint = full }
EOF
expect_status 2 "$DTPLAN" "$TMP/mine.dtp" --emit "$TMP/mine_job" --framework megatron --quiet
expect_contains "$TMP/err" "error: cannot write plan 's' as a megatron job: megatron does not split a pipeline with account_for_embedding_in_pipeline_split, account_for_loss_in_pipeline_split so: 32 layers and the embedding and the loss counted as two more do not divide over 4 pipeline chunks"
# And no torchtitan job where its stages of one size cannot make the chunks
# of a counted split costed under a framework that splits unevenly (34 over
# 4 x 4: a size of 3 makes 12).
sed 's/framework mine : torchtitan { zero_stages = {0, 1, 3} }/framework mine : torchtitan { pipeline_split = uneven }/; s/strategy s { pp = 4; dp = 4; zero = 1; checkpoint = full }/strategy s { pp = 4; virtual_stages = 4; dp = 4; zero = 3; checkpoint = full }/' \
  "$TMP/mine.dtp" >"$TMP/mine_sized.dtp"
expect_status 2 "$DTPLAN" "$TMP/mine_sized.dtp" --emit "$TMP/mine_sized_job" --framework torchtitan --quiet
expect_contains "$TMP/err" "error: cannot write plan 's' as a torchtitan job: torchtitan makes ceil(34 layers and counted embedding and loss / pipeline_parallel_layers_per_stage) stages: no size gives the 16 pipeline chunks (pp x virtual_stages = 4 x 4; 3 a stage makes 12)"
cp "$TMP/tt_pp4.toml" "$TMP/tt_pp4_two.toml"
printf '%s\n' 'pipeline_parallel_first_stage_less_layers = 2' >>"$TMP/tt_pp4_two.toml"
expect_status 0 "$DTPLAN" "$plan" --from torchtitan "$TMP/tt_pp4_two.toml" --dump ir
expect_contains "$TMP/err" "tt_pp4_two.toml:7:1: warning: torchtitan counts the embedding and the output as more than a layer each when it splits the pipeline (pipeline_parallel_first_stage_less_layers, pipeline_parallel_last_stage_less_layers); dtplan counts each as one layer at most: costed on dtplan's split of the transformer layers"
expect_lacks "$TMP/out" "account_for"
printf '%s\n' 'pipeline_parallel_first_stage_less_layers = 0' 'pipeline_parallel_last_stage_less_layers = 0' >>"$TMP/tt_pp4.toml"
expect_status 0 "$DTPLAN" "$plan" --from torchtitan "$TMP/tt_pp4.toml"
expect_lacks "$TMP/err" "counts the embedding"
expect_contains "$TMP/out" "strategy 'torchtitan'  [valid]"
expect_status 0 "$DTPLAN" "$plan" --from torchtitan "$TMP/tt_pp4.toml" --dump ir
expect_lacks "$TMP/out" "account_for"
# The script a Megatron-LM job starts: Megatron-LM's other pretrain_*.py
# train models dtplan does not cost (core_v0.13.0 examples/bert/
# train_bert_340m_distributed.sh, examples/mamba/train.sh); another name is
# read as pretrain_gpt.py's arguments, with a warning.
printf '%s\n' 'torchrun --nproc_per_node 8 ../../pretrain_mamba.py --num-layers 2 --micro-batch-size 1' >"$TMP/mamba.sh"
expect_status 2 "$DTPLAN" "$plan" --from megatron "$TMP/mamba.sh"
expect_contains "$TMP/err" "mamba.sh:1:29: error: 'pretrain_mamba.py' trains another kind of model than dtplan costs: dtplan reads the jobs of Megatron-LM's pretrain_gpt.py, decoder-only transformers"
printf '%s\n' 'torchrun my_train.py --micro-batch-size 1 --global-batch-size 16 --use-distributed-optimizer --tensor-model-parallel-size 2' >"$TMP/mine.sh"
expect_status 0 "$DTPLAN" "$plan" --from megatron "$TMP/mine.sh"
expect_contains "$TMP/err" "mine.sh:1:10: warning: 'my_train.py' is not Megatron-LM's pretrain_gpt.py: its arguments are read as that script's, a decoder-only transformer's"
printf '%s\n' 'torchrun --nproc-per-node 8 tools/run_text_generation_server.py --micro-batch-size 1' >"$TMP/serve.sh"
expect_status 2 "$DTPLAN" "$plan" --from megatron "$TMP/serve.sh"
expect_contains "$TMP/err" "serve.sh:1:29: error: 'run_text_generation_server.py' runs inference, not training: dtplan plans a training step"
printf '%s\n' 'torchrun pretrain_bert.py --micro-batch-size 1' >"$TMP/bert.sh"
expect_status 2 "$DTPLAN" "$plan" --from deepspeed "$TMP/bert.sh"
expect_contains "$TMP/err" "bert.sh:1:10: error: 'pretrain_bert.py' trains another kind of model than dtplan costs: dtplan reads the jobs of Megatron-DeepSpeed's pretrain_gpt.py, decoder-only transformers"

# Megatron-DeepSpeed's experts are DeepSpeed-MoE's, which dtplan does not
# cost: refused, not costed as the dense model; --num-experts 1 is dense and
# the MoE arguments beside it apply to nothing.
mds=tests/data/published/megatron_deepspeed_llama2
cp "$mds/ds_config.json" "$TMP/ds_config.json"
{ cat "$mds/args.txt"; printf -- '--num-experts 8\n--topk 2\n'; } >"$TMP/mds_moe.txt"
n=$(($(wc -l <"$mds/args.txt") + 1))
expect_status 2 "$DTPLAN" "$mds/cluster.dtp" --from deepspeed "$TMP/mds_moe.txt"
expect_contains "$TMP/err" "mds_moe.txt:$n:15: error: Megatron-DeepSpeed's mixture of experts (DeepSpeed-MoE's capacity-bound gating and einsum dispatch) is not modelled: dtplan costs Megatron-LM's experts (--from megatron), not 8 experts here as a dense model"
sed -i 's/^--num-experts 8$/--num-experts 1/' "$TMP/mds_moe.txt"
expect_status 0 "$DTPLAN" "$mds/cluster.dtp" --from deepspeed "$TMP/mds_moe.txt"
expect_contains "$TMP/err" "mds_moe.txt:$((n + 1)):1: warning: Megatron-DeepSpeed's '--topk' is not read: it applies only to a mixture of experts (--num-experts above 1)"

# Hugging Face's Trainer fills "auto" in a ds_config.json from its own
# arguments (transformers integrations/deepspeed.py): dtplan says what it
# costs instead. The batch per GPU is the .dtp file's global batch (256)
# over the 16 data-parallel ranks; the bucket the hidden size squared.
cat >"$TMP/hf.json" <<'JSON'
{
  "bf16": {"enabled": "auto"},
  "zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"},
  "gradient_accumulation_steps": "auto",
  "train_batch_size": "auto",
  "train_micro_batch_size_per_gpu": "auto"
}
JSON
expect_status 1 "$DTPLAN" "$plan" --from deepspeed "$TMP/hf.json"
expect_contains "$TMP/err" "hf.json:2:23: warning: 'bf16.enabled' is 'auto': Hugging Face's Trainer fills it in from its '--bf16' argument, which dtplan does not see: costed in the .dtp file's precision"
expect_contains "$TMP/err" "hf.json:3:59: warning: 'zero_optimization.reduce_bucket_size' is 'auto': Hugging Face's Trainer fills it in as the model's hidden size squared, 16777216 elements: costed so"
expect_contains "$TMP/err" "hf.json:4:34: warning: 'gradient_accumulation_steps' is 'auto': Hugging Face's Trainer fills it in from its '--gradient_accumulation_steps' argument (default 1), which dtplan does not see: costed at 1"
expect_contains "$TMP/err" "hf.json:5:23: warning: 'train_batch_size' is 'auto': Hugging Face's Trainer fills it in as the world's size x the batch per GPU x the accumulation, which dtplan does not see: costed as the job's other figures give it"
expect_contains "$TMP/err" "hf.json:6:37: warning: 'train_micro_batch_size_per_gpu' is 'auto': Hugging Face's Trainer fills it in from its '--per_device_train_batch_size' argument (default 8), which dtplan does not see: costed at 16, the global batch 256 over 16 data-parallel ranks"
expect_contains "$TMP/out" "dp 16, tp 1, pp 1, cp 1, zero 2, shard all, checkpoint none, micro_batch 16"
expect_contains "$TMP/out" "bf16, adam"
expect_status 0 "$DTPLAN" "$plan" --from deepspeed "$TMP/hf.json" --dump ir
expect_contains "$TMP/out" "ddp_bucket_size   32.0 MiB (33554432 B)"
sed 's/"stage": 2/"stage": "auto"/' "$TMP/hf.json" >"$TMP/hf_stage.json"
expect_status 2 "$DTPLAN" "$plan" --from deepspeed "$TMP/hf_stage.json"
expect_contains "$TMP/err" "hf_stage.json:3:34: error: 'zero_optimization.stage' is 'auto', which no Trainer fills in: write the stage, 0 to 3"

# torchtitan v0.1.0's spellings (training.compile, [float8]) read as
# v0.2.0's [compile] and [quantize.linear.float8].
printf '%s\n' '[model]' 'converters = ["float8"]' '[training]' 'local_batch_size = 1' 'seq_len = 4096' 'compile = true' \
  '[parallelism]' 'data_parallel_shard_degree = 16' '[float8]' 'enable_fsdp_float8_all_gather = true' \
  'precompute_float8_dynamic_scale_for_fsdp = true' 'filter_fqns = ["output"]' >"$TMP/v010.toml"
expect_status 0 "$DTPLAN" "$plan" --from torchtitan "$TMP/v010.toml" --dump ir
expect_contains "$TMP/out" "  fused_elementwise true"
expect_contains "$TMP/out" "  fp8_param_gather  true"
expect_lacks "$TMP/err" "compile"
expect_lacks "$TMP/err" "float8."

# Megatron-LM's shape arguments that match what dtplan costs are read
# silently (bias-free linears with SwiGLU, rotary over the whole head);
# the others say what is costed instead.
printf -- '--num-layers 2\n--hidden-size 4096\n--num-attention-heads 32\n--seq-length 4096\n--micro-batch-size 1\n--global-batch-size 16\n--disable-bias-linear\n--rotary-percent 0.5\n--apply-layernorm-1p\n' \
  >"$TMP/shape.args"
expect_status 0 "$DTPLAN" "$plan" --from megatron "$TMP/shape.args"
expect_contains "$TMP/err" "shape.args:7:1: warning: Megatron-LM's '--disable-bias-linear' with a GELU MLP is not modelled: costed with GPT's biases, a few vectors of the hidden size a layer"
expect_contains "$TMP/err" "shape.args:8:1: warning: Megatron-LM's rotary share of each head '0.5' is not modelled: costed as '1.0'"
expect_contains "$TMP/err" "shape.args:9:1: warning: Megatron-LM's '--apply-layernorm-1p' is not read: it does not change a step's time or memory"
printf -- '--swiglu\n--rotary-percent 1.0\n' >>"$TMP/shape.args"
expect_status 0 "$DTPLAN" "$plan" --from megatron "$TMP/shape.args"
expect_lacks "$TMP/err" "disable-bias-linear"
expect_lacks "$TMP/err" "rotary share"

# A model the job names: compared with the file's when dtplan knows it,
# else the warning says which of the two is costed (torchtitan v0.2.0's
# llama4 and qwen3 configurations name theirs).
printf '%s\n' '[model]' 'name = "llama4"' 'flavor = "17bx128e"' >"$TMP/named.toml"
expect_status 0 "$DTPLAN" "$plan" --from torchtitan "$TMP/named.toml"
expect_contains "$TMP/err" "$TMP/named.toml:3:1: warning: the file's model 'llama2_7b' is costed: torchtitan's model 'llama4' flavor '17bx128e' is not in dtplan's catalog (llama3 '8B', '70B' and '405B'; qwen3 '32B', '30B-A3B' and '235B-A22B'; deepseek_v3 '671B' are), so its shape is not compared"
printf '%s\n' '[model]' 'name = "qwen3"' 'flavor = "32B"' >"$TMP/named.toml"
expect_status 0 "$DTPLAN" "$plan" --from torchtitan "$TMP/named.toml"
expect_contains "$TMP/err" "$TMP/named.toml:3:1: warning: the file's model 'llama2_7b' is costed: torchtitan's qwen3 '32B' has another shape"
printf '%s\n' '[model]' 'name = "llama3"' 'flavor = "70B"' >"$TMP/named.toml"
expect_status 0 "$DTPLAN" "$plan" --from torchtitan "$TMP/named.toml"
expect_contains "$TMP/err" "$TMP/named.toml:3:1: warning: the file's model 'llama2_7b' is costed: torchtitan's llama3 '70B' has another shape"
expect_status 0 "$DTPLAN" "$plan" --from torchtitan "$TMP/job.toml"
expect_lacks "$TMP/err" "is costed"
printf '%s\n' '[parallelism]' 'tensor_parallel_degree = 3' >"$TMP/bad.toml"
expect_status 2 "$DTPLAN" "$plan" --from torchtitan "$TMP/bad.toml" --quiet
expect_contains "$TMP/err" "$TMP/bad.toml:2:26: error: torchtitan shards over the ranks left, but the cluster's 16 GPUs are not a multiple of data_parallel_replicate_degree x tensor x pipeline x context degrees = 3"

# torchtitan's DeepSeek-V3 (v0.2.0 models/deepseek_v3/__init__.py, '671B'):
# the catalog's deepseek_v3 routed over every expert (torchtitan does not
# read its groups), FlexAttention with a block-causal mask, no context
# parallelism with it.
printf '%s\n' 'cluster dgx_h100_x128 {' '  nodes = 128' '  gpus_per_node = 8' '  gpu = H100_SXM' \
  '  inter_node = 8 x 400 Gbit/s' '}' >"$TMP/dgx.dtp"
printf '%s\n' '[model]' 'name = "deepseek_v3"' 'flavor = "671B"' '[training]' 'local_batch_size = 4' 'seq_len = 4096' \
  '[parallelism]' 'expert_parallel_degree = 64' '[activation_checkpoint]' 'mode = "full"' >"$TMP/dsv3.toml"
expect_status 0 "$DTPLAN" "$TMP/dgx.dtp" --from torchtitan "$TMP/dsv3.toml"
expect_contains "$TMP/err" "$TMP/dsv3.toml:3:1: warning: torchtitan's deepseek_v3 '671B' runs FlexAttention with a block-causal mask: costed as causal attention over the whole sequence, the most it does (a sequence of several documents attends within each)"
expect_contains "$TMP/out" "    not measured                 multi-latent attention: no published run behind that figure has one, so its terms are unchecked"
expect_contains "$TMP/out" "    not measured                 FlexAttention kernel: no published run behind that figure has one, so its terms are unchecked"
expect_contains "$TMP/out" "  model     deepseek_v3: 671.03 B parameters; 61 layers, hidden 7168, 128 heads (128 kv) of multi-latent attention (q rank 1536, kv rank 512; q/k heads 128 + 64 rotary, v heads 128), ffn 2048 swiglu x 256 experts (8 a token) + a shared expert"
expect_status 0 "$DTPLAN" "$TMP/dgx.dtp" --from torchtitan "$TMP/dsv3.toml" --dump ir
expect_contains "$TMP/out" "  attention_backend flex"
expect_contains "$TMP/out" "  router_groups     0"
sed 's/^expert_parallel_degree = 64$/&\ncontext_parallel_degree = 2/' "$TMP/dsv3.toml" >"$TMP/dsv3_cp.toml"
expect_status 1 "$DTPLAN" "$TMP/dgx.dtp" --from torchtitan "$TMP/dsv3_cp.toml"
expect_contains "$TMP/err" "$TMP/dsv3_cp.toml:9:1: error: cp = 2 with attention_backend = flex: PyTorch's context parallelism does not run FlexAttention (torchtitan v0.2.0 refuses it)"
# Its op-level checkpointing, as the 671B TOML asks (compiling the loss
# only): FlexAttention's blocks wrapped module by module, the attention
# fully recomputed, the mixture op-SAC'd with the all-to-alls' outputs
# kept (1.1 GiB a layer at ep 64). Compiled, the attention is op-SAC'd
# too: more kept, less recomputed, its kernels fused.
printf '%s\n' '[model]' 'name = "deepseek_v3"' 'flavor = "671B"' '[training]' 'local_batch_size = 1' 'seq_len = 4096' \
  '[parallelism]' 'expert_parallel_degree = 64' '[activation_checkpoint]' 'mode = "selective"' \
  "selective_ac_option = 'op'" '[compile]' 'enable = true' 'components = ["loss"]' >"$TMP/dsv3_op.toml"
expect_status 1 "$DTPLAN" "$TMP/dgx.dtp" --from torchtitan "$TMP/dsv3_op.toml"
expect_contains "$TMP/err" "$TMP/dsv3_op.toml:14:1: warning: torchtitan compiles no transformer block without 'model' in 'compile.components': costed with its eager kernels"
expect_contains "$TMP/err" "$TMP/dsv3_op.toml:1:1: error: strategy 'torchtitan' needs 90.9 GiB per GPU; H100_SXM has 79.6 GiB (75.6 usable)"
expect_contains "$TMP/out" "        68.8 GiB  activations (61 layers x 1 micro-batch in flight x 1.1 GiB per layer, checkpoint = ops)"
# The policy's forced recomputation as torchtitan defaults it (the router's
# gate) is what is costed; another list is said not to be.
sed -i "s/^selective_ac_option = 'op'$/&\nper_op_sac_force_recompute_mm_shapes_by_fqns = [\"moe.router.gate\"]/" "$TMP/dsv3_op.toml"
expect_status 1 "$DTPLAN" "$TMP/dgx.dtp" --from torchtitan "$TMP/dsv3_op.toml"
expect_lacks "$TMP/err" "per_op_sac_force_recompute_mm_shapes_by_fqns"
sed 's/^per_op_sac_force_recompute_mm_shapes_by_fqns = .*/per_op_sac_force_recompute_mm_shapes_by_fqns = []/' \
  "$TMP/dsv3_op.toml" >"$TMP/dsv3_op_forced.toml"
expect_status 1 "$DTPLAN" "$TMP/dgx.dtp" --from torchtitan "$TMP/dsv3_op_forced.toml"
expect_contains "$TMP/err" "$TMP/dsv3_op_forced.toml:12:1: warning: torchtitan's 'activation_checkpoint.per_op_sac_force_recompute_mm_shapes_by_fqns' other than [\"moe.router.gate\"] is not costed: costed as that default (the router's gate recomputed, every other matmul kept)"
sed 's/^expert_parallel_degree = 64$/&\npipeline_parallel_degree = 4/' "$TMP/dsv3_op.toml" >"$TMP/dsv3_op_pp.toml"
expect_status 0 "$DTPLAN" "$TMP/dgx.dtp" --from torchtitan "$TMP/dsv3_op_pp.toml"
expect_contains "$TMP/out" "  time per step                      4.90 s"
expect_contains "$TMP/out" "    recomputation                    242 ms   4.9 %"
expect_contains "$TMP/out" "    activations                    19.2 GiB"
sed 's/^components = \["loss"\]$/components = ["model", "loss"]/' "$TMP/dsv3_op_pp.toml" >"$TMP/dsv3_op_compiled.toml"
expect_status 0 "$DTPLAN" "$TMP/dgx.dtp" --from torchtitan "$TMP/dsv3_op_compiled.toml"
expect_lacks "$TMP/err" "compiles no transformer block"
expect_contains "$TMP/out" "  time per step                      4.29 s"
expect_contains "$TMP/out" "    recomputation                    169 ms   3.9 %"
expect_contains "$TMP/out" "    activations                    22.2 GiB"

# --explain lists what one layer keeps; the JSON always has it.
expect_status 0 "$DTPLAN" plans/deepseek_v3_torchtitan.dtp --strategy fsdp_ep64 --explain
expect_contains "$TMP/out" "    one layer's activations: a mixture layer (58 of the stage's 61) for one micro-batch, 1.2 GiB"
expect_contains "$TMP/out" "        56.0 MiB  attention input (kept by its full checkpoint)"
expect_contains "$TMP/out" "        16.0 MiB  shared expert gate projection output"
expect_contains "$TMP/out" "       448.0 MiB  routed tokens after the dispatch all-to-all"
expect_status 0 "$DTPLAN" plans/deepseek_v3_torchtitan.dtp --strategy fsdp_ep64
expect_lacks "$TMP/out" "one layer's activations"
expect_status 0 "$DTPLAN" plans/deepseek_v3_torchtitan.dtp --strategy fsdp_ep64 --format json
expect_contains "$TMP/out" '"layer": "a mixture layer (58 of the stage'"'"'s 61)"'
expect_contains "$TMP/out" '"term": "routed tokens after the dispatch all-to-all",'
expect_contains "$TMP/out" '"bytes": 469762048'

# And written back: the plan's model as the flavor, with what the flavor
# runs whatever the job says (FlexAttention, every expert routed) said where
# the plan was costed otherwise, and what torchtitan cannot run refused.
expect_status 0 "$DTPLAN" plans/deepseek_v3_torchtitan.dtp --strategy fsdp_ep64 --emit "$TMP/tt_dsv3" --framework torchtitan
expect_lacks "$TMP/err" "warning"
expect_contains "$TMP/tt_dsv3/torchtitan/job.toml" 'name = "deepseek_v3"'
expect_contains "$TMP/tt_dsv3/torchtitan/job.toml" 'flavor = "671B"'
expect_contains "$TMP/tt_dsv3/torchtitan/job.toml" 'selective_ac_option = "op"'
expect_lacks "$TMP/tt_dsv3/torchtitan/job.toml" "Register"
expect_status 0 "$DTPLAN" plans/deepseek_v3_torchtitan.dtp --strategy fsdp_ep64 --emit "$TMP/tt_dsv3_groups" \
  --framework torchtitan --set model.router_groups=8 --set model.router_group_topk=4
expect_contains "$TMP/err" "<--set>:1:7: warning: the plan was costed with router_groups = 8 (each token's experts from 4 of them); torchtitan's deepseek_v3 '671B' routes over every expert"
expect_status 0 "$DTPLAN" plans/deepseek_v3_torchtitan.dtp --strategy fsdp_ep64 --emit "$TMP/tt_dsv3_flash" \
  --framework torchtitan --set training.attention_backend=flash
expect_contains "$TMP/err" "<--set>:1:10: warning: the plan was costed with attention_backend = flash; a torchtitan job cannot say it and runs flex"
expect_status 2 "$DTPLAN" plans/deepseek_v3_torchtitan.dtp --strategy fsdp_ep64 --emit "$TMP/tt_dsv3_cp" \
  --framework torchtitan --set training.attention_backend=flash --set fsdp_ep64.cp=2 --set fsdp_ep64.dp=512
expect_contains "$TMP/err" "error: cannot write plan 'fsdp_ep64' as a torchtitan job: torchtitan's deepseek_v3 '671B' runs FlexAttention, which its context parallelism does not run; the plan has cp = 2"
expect_status 2 "$DTPLAN" plans/deepseek_v3_torchtitan.dtp --strategy fsdp_ep64 --emit "$TMP/tt_dsv3_mla" \
  --framework torchtitan --set model.q_lora_rank=0
expect_contains "$TMP/err" "error: cannot write plan 'fsdp_ep64' as a torchtitan job: torchtitan's multi-latent attention is its deepseek_v3 model's, which dtplan writes as its flavor '671B' only; the plan's model has another shape (the llama3 and qwen3 models it registers are not multi-latent)"

# A job of another framework than the file's: the training keys the file
# writes for its framework are left out (DeepEP, bf16 gradients, Megatron's
# pipeline split), unless --set makes the file's framework the job's.
expect_status 0 "$DTPLAN" plans/deepseek_v3_megatron.dtp --from torchtitan "$TMP/dsv3.toml"
expect_contains "$TMP/err" "plans/deepseek_v3_megatron.dtp:33:3: warning: the training block's keys for framework 'megatron' are left out of this torchtitan job, which its framework's preset and its own settings run: grad_precision, recompute_modules, num_layers_in_first_pipeline_stage, num_layers_in_last_pipeline_stage, moe_token_dispatcher, shared_expert_overlap (--set training.framework=torchtitan keeps them)"
expect_contains "$TMP/err" "$TMP/dsv3.toml:3:1: warning: the file's model 'v3' is costed: torchtitan's deepseek_v3 '671B' has another shape"
expect_status 0 "$DTPLAN" plans/deepseek_v3_megatron.dtp --from torchtitan "$TMP/dsv3.toml" --dump ir
expect_contains "$TMP/out" "  moe_token_dispatcher alltoall"
expect_status 0 "$DTPLAN" plans/deepseek_v3_megatron.dtp --from torchtitan "$TMP/dsv3.toml" --set training.framework=torchtitan --dump ir
expect_lacks "$TMP/err" "are left out"
expect_contains "$TMP/out" "  moe_token_dispatcher flex"
# A framework block of the file that derives from the job's: the job's
# framework is the file's, with what the file writes.
sed 's/^  framework    = megatron .*/  framework    = mytt\n  fused_rotary = false/' "$plan" >"$TMP/mytt.dtp"
printf '%s\n' 'framework mytt : torchtitan {' '  description = "our torchtitan fork"' '}' >>"$TMP/mytt.dtp"
expect_status 0 "$DTPLAN" "$TMP/mytt.dtp" --from torchtitan "$TMP/job.toml" --dump ir
expect_lacks "$TMP/err" "are left out"
expect_contains "$TMP/out" "  framework         mytt"
expect_contains "$TMP/out" "  fused_rotary      false"

# NeMo's MLPerf script: the files it sources are read beside it, what it
# sets and dtplan does not model a warning there; a file it sources that is
# missing is an error at its 'source' line. nemo is read only.
pub=tests/data/published/mlperf_nemo_gpt3
expect_status 0 "$DTPLAN" "$pub/cluster.dtp" --from nemo "$pub/config_DGXH100_64x8x128x4x8_mbs2.sh" \
  --set training.global_batch=2304
expect_contains "$TMP/out" "dp 16, tp 4, pp 8, cp 1, zero 1, shard all, checkpoint none, micro_batch 2, virtual_stages 4, sequence_parallel true"
expect_contains "$TMP/err" "$pub/config_common.sh:14:8: warning: NeMo's 'NCCL_MIN_NCHANNELS' is not read"
expect_contains "$TMP/err" "$pub/config_fp8.sh:4:8: warning: NeMo's 'FP8_AMAX_HISTORY' is not read: it does not change a step's time or memory"
# ASYM_PP_EMBED / ASYM_PP_LOSS (the 405B configs'): the embedding and the
# loss counted as layers, which GPT-3's 96 layers over 8 x 4 chunks do not
# take (Megatron-Core asserts the count divides).
mkdir "$TMP/nemo_asym" && cp "$pub"/* "$TMP/nemo_asym/"
printf 'export ASYM_PP_EMBED=True\nexport ASYM_PP_LOSS=True\n' >>"$TMP/nemo_asym/config_DGXH100_64x8x128x4x8_mbs2.sh"
expect_status 1 "$DTPLAN" "$TMP/nemo_asym/cluster.dtp" --from nemo "$TMP/nemo_asym/config_DGXH100_64x8x128x4x8_mbs2.sh" \
  --set training.global_batch=2304 --quiet
expect_contains "$TMP/err" "config_DGXH100_64x8x128x4x8_mbs2.sh:38:8: error: pp x virtual_stages = 8 x 4 with account_for_embedding_in_pipeline_split, account_for_loss_in_pipeline_split: 96 layers and the embedding and the loss counted as two more do not divide over 32 pipeline chunks"
expect_lacks "$TMP/err" "ASYM_PP"
mkdir "$TMP/nemo" && cp "$pub/config_DGXH100_64x8x128x4x8_mbs2.sh" "$TMP/nemo/"
expect_status 2 "$DTPLAN" "$pub/cluster.dtp" --from nemo "$TMP/nemo/config_DGXH100_64x8x128x4x8_mbs2.sh" --quiet
expect_contains "$TMP/err" "$TMP/nemo/config_DGXH100_64x8x128x4x8_mbs2.sh:19:12: error: cannot read '$TMP/nemo/config_common.sh'"

# An uneven split runs on Megatron-Core as --pipeline-model-parallel-layout
# (a stage a chunk, the first chunks a layer more), one quoted word in
# args.txt that launch.sh hands to pretrain_gpt.py whole, and reads back.
expect_status 0 "$DTPLAN" "$plan" --strategy current --set current.pp=2 --set current.dp=8 \
  --set current.virtual_stages=3 --emit "$TMP/ue" --quiet
expect_contains "$TMP/ue/megatron/args.txt" "--pipeline-model-parallel-layout 'E,t*6|t*6|t*5|t*5|t*5|t*5,L'"
expect_lacks "$TMP/ue/megatron/args.txt" "virtual-pipeline"
mkdir "$TMP/bin" && printf '#!/bin/sh\nprintf "[%%s]\\n" "$@"\n' >"$TMP/bin/torchrun" && chmod +x "$TMP/bin/torchrun"
expect_status 0 env PATH="$TMP/bin:$PATH" NODE_RANK=0 bash "$TMP/ue/megatron/launch.sh" --data-path 'a b'
expect_contains "$TMP/out" "[E,t*6|t*6|t*5|t*5|t*5|t*5,L]"
expect_contains "$TMP/out" "[a b]"
expect_contains "$TMP/out" "[pretrain_gpt.py]"
expect_lacks "$TMP/out" "'"
expect_status 0 "$DTPLAN" "$plan" --from megatron "$TMP/ue/megatron/args.txt"
expect_contains "$TMP/out" "dp 8, tp 1, pp 2, cp 1, zero 1, shard all, checkpoint selective, micro_batch 1, virtual_stages 3,"
expect_lacks "$TMP/err" "costed as dtplan's split"
layout() {  # LAYOUT: args.txt with it in place of the plan's
  sed "s/^--pipeline-model-parallel-layout .*/--pipeline-model-parallel-layout '$1'/" "$TMP/ue/megatron/args.txt" \
    >"$TMP/layout.txt"
}
reads() {  # STATUS LAYOUT DIAGNOSTIC: --from megatron with that layout exits STATUS and says DIAGNOSTIC
  layout "$2"
  expect_status "$1" "$DTPLAN" "$plan" --from megatron "$TMP/layout.txt"
  expect_contains "$TMP/err" "$3"
}
reads 0 'E|(t*16|)*2L' "layout.txt:25:34: warning: costed as dtplan's split of 32 layers over 4 chunks, 8 each, whose most loaded pipeline rank has 16 layers, as the layout's has"
expect_contains "$TMP/out" "virtual_stages 2,"
reads 0 'E,t*7|t*6|t*5|t*5|t*5|t*4,L' "warning: costed as dtplan's split of 32 layers over 6 chunks, the first 2 a layer more, whose most loaded pipeline rank has 16 layers; the layout's has 17"
reads 2 'E,t*6|t*6|t*5|t*5|t*5|t*4,L' "layout.txt:25:34: error: '--pipeline-model-parallel-layout' places 31 transformer layers; the model has 32"
# A layout that is Megatron-Core's uneven first and last stages, or its
# counted embedding and loss, is read as those keys: no warning, the
# job's split costed.
layout 'E,t*15|t*17,L'
expect_status 0 "$DTPLAN" "$plan" --from megatron "$TMP/layout.txt"
expect_lacks "$TMP/err" "warning"
expect_contains "$TMP/out" "  layers 15 on stage 0, 17 on stage 1"
expect_status 0 "$DTPLAN" "$plan" --from megatron "$TMP/layout.txt" --dump ir
expect_contains "$TMP/out" "  num_layers_in_first_pipeline_stage 15"
expect_contains "$TMP/out" "  num_layers_in_last_pipeline_stage 17"
layout 'E,t*7|t*8|t*8|t*7,L'
sed -i 's/^--num-layers 32$/--num-layers 30/' "$TMP/layout.txt"
expect_status 0 "$DTPLAN" "$plan" --from megatron "$TMP/layout.txt" --dump ir
expect_lacks "$TMP/err" "warning"
expect_contains "$TMP/out" "  account_for_embedding_in_pipeline_split true"
expect_contains "$TMP/out" "  account_for_loss_in_pipeline_split true"
expect_lacks "$TMP/out" "num_layers_in_"
reads 2 'E|(t*8|)*3,t*8,L' "error: '--pipeline-model-parallel-layout' has 5 stages, not a multiple of the pipeline's 2"
reads 2 't*16|t*16,L' "error: '--pipeline-model-parallel-layout' must start with the embedding E and end with the loss L, each written once"
reads 2 'E,t*16|T*16,L' "error: '--pipeline-model-parallel-layout' has 'T' where Megatron-LM reads E (embedding), t (transformer layer), m (MTP layer), L (loss) and '|'"
reads 2 'E,t*16|t*1é,L' "error: '--pipeline-model-parallel-layout' has 'é' where Megatron-LM reads E (embedding), t (transformer layer), m (MTP layer), L (loss) and '|'"
reads 2 'E,t*32,L' "error: '--pipeline-model-parallel-layout' has 1 stage, not a multiple of the pipeline's 2"
reads 2 'E,t*99999999999999999999|t,L' "error: '--pipeline-model-parallel-layout' unrolls to more than 1048576 layers"
reads 2 'E,t*16|t*16,m,L' "layout.txt:25:34: error: '--pipeline-model-parallel-layout' places multi-token prediction layers (m), which Megatron-LM core_v0.13.0 does not run in a layout (pipeline_parallel_layer_layout.py:109-110): without one it runs them on the last stage"
layout 'E,t*16|t*16,L'
printf -- '--account-for-loss-in-pipeline-split\n' >>"$TMP/layout.txt"
expect_status 2 "$DTPLAN" "$plan" --from megatron "$TMP/layout.txt"
expect_contains "$TMP/err" "layout.txt:35:1: error: '--account-for-loss-in-pipeline-split' and '--pipeline-model-parallel-layout' are both written (Megatron-LM takes the layout alone)"

# Megatron-Core's uneven first and last stages, split as it splits them
# (the middle ranks share the rest) and checked as it checks them.
stages() {  # STATUS ARGUMENTS DIAGNOSTIC: the plan's job with ARGUMENTS for its layout
  sed "s/^--pipeline-model-parallel-layout .*/$2/" "$TMP/ue/megatron/args.txt" >"$TMP/stages.txt"
  expect_status "$1" "$DTPLAN" "$plan" --from megatron "$TMP/stages.txt"
  [ -z "$3" ] || expect_contains "$TMP/err" "$3"
}
stages 0 "--decoder-first-pipeline-num-layers 12" ""
expect_lacks "$TMP/err" "warning"
expect_contains "$TMP/out" "  layers 12 on stage 0, 20 on stage 1"
expect_lacks "$TMP/out" "an upper bound"
expect_contains "$TMP/out" "training  global batch"
stages 0 "--decoder-first-pipeline-num-layers 16" ""
expect_lacks "$TMP/err" "decoder"
stages 0 "--decoder-last-pipeline-num-layers 8 --num-virtual-stages-per-pipeline-rank 2" ""
expect_lacks "$TMP/err" "warning"
expect_contains "$TMP/out" "  layers 24 on stage 0, 8 on stage 1"
expect_contains "$TMP/out" "virtual_stages 2,"
stages 2 "--decoder-first-pipeline-num-layers 12 --decoder-last-pipeline-num-layers 19" "stages.txt:25:37: error: the first and last stages' 31 layers are not the model's 32"
stages 2 "--decoder-first-pipeline-num-layers 0" "error: '--decoder-first-pipeline-num-layers' must be larger than 0"
stages 2 "--decoder-first-pipeline-num-layers 13 --num-virtual-stages-per-pipeline-rank 2" "error: the first stage's 13 layers do not divide over its 2 virtual stages"
stages 2 "--decoder-first-pipeline-num-layers 12 --num-layers-per-virtual-pipeline-stage 2" "error: Megatron-LM takes '--num-virtual-stages-per-pipeline-rank', not '--num-layers-per-virtual-pipeline-stage', with '--decoder-first-pipeline-num-layers'"
# Without them Megatron-LM splits evenly, and refuses a job that does not
# divide (dtplan's uneven split would cost a job that never starts).
stages 2 "--num-layers 31" "stages.txt:23:32: error: Megatron-LM splits the layers evenly over the pipeline's ranks: 31 layers do not divide over 2; '--decoder-first-pipeline-num-layers', '--decoder-last-pipeline-num-layers' or '--pipeline-model-parallel-layout' split them unevenly"
stages 2 "--account-for-embedding-in-pipeline-split" "error: Megatron-LM splits the layers evenly over the pipeline's ranks: 33 layers (32 layers and the embedding) do not divide over 2;"
stages 0 "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split" ""
expect_lacks "$TMP/err" "warning"
expect_status 0 "$DTPLAN" "$plan" --from megatron "$TMP/stages.txt" --dump ir
expect_contains "$TMP/out" "  account_for_embedding_in_pipeline_split true"
expect_contains "$TMP/out" "  account_for_loss_in_pipeline_split true"
# The first and last stages written, the embedding or loss counted too:
# Megatron-Core asserts (transformer_block.py:82-88).
stages 2 "--decoder-first-pipeline-num-layers 12 --account-for-loss-in-pipeline-split" "error: '--account-for-loss-in-pipeline-split' and '--decoder-first-pipeline-num-layers' are both written (Megatron-LM splits by one or the other)"
stages 2 "--num-virtual-stages-per-pipeline-rank 3" "stages.txt:25:40: error: each pipeline rank's 16 layers do not divide over its 3 virtual stages"
stages 2 "--num-layers-per-virtual-pipeline-stage 3" "stages.txt:25:41: error: each pipeline rank's 16 layers do not divide into chunks of 3 layers"
stages 2 "--num-layers-per-virtual-pipeline-stage 0" "error: '--num-layers-per-virtual-pipeline-stage' must be larger than 0"
stages 0 "--num-layers-per-virtual-pipeline-stage 4" ""
expect_contains "$TMP/out" "virtual_stages 4,"
stages 2 "--num-layers-per-virtual-pipeline-stage 4 --num-virtual-stages-per-pipeline-rank 2" "stages.txt:25:43: error: '--num-layers-per-virtual-pipeline-stage' and '--num-virtual-stages-per-pipeline-rank' are both written (Megatron-LM takes one; core_v0.13.0 arguments.py:496-507)"
# --kv-channels is each head's width, the model's head_dim: hidden / heads
# or not.
stages 0 "--kv-channels 128" ""
expect_lacks "$TMP/err" "kv-channels"
expect_lacks "$TMP/out" " of 128, ffn"
stages 0 "--kv-channels 64" ""
expect_lacks "$TMP/err" "kv-channels"
expect_contains "$TMP/out" "5.66 B parameters; 32 layers, hidden 4096, 32 heads (32 kv) of 64, ffn"
stages 2 "--kv-channels 0" "stages.txt:25:15: error: 'head_dim' must be at least 1, got 0"
# --qk-layernorm: q/k norms; a job that describes its model without it has none.
stages 0 "--qk-layernorm" ""
expect_lacks "$TMP/err" "qk-layernorm"
expect_contains "$TMP/out" "32 heads (32 kv) with q/k norms, ffn 11008"
stages 0 "--kv-channels 128" ""
sed 's/^model llama2_7b {$/model llama2_7b { qk_norm = true/' plans/7b_2node.dtp >"$TMP/qk_norm.dtp"
expect_status 0 "$DTPLAN" "$TMP/qk_norm.dtp"
expect_contains "$TMP/out" "32 heads (32 kv) with q/k norms, ffn 11008"
expect_status 0 "$DTPLAN" "$TMP/qk_norm.dtp" --from megatron "$TMP/stages.txt"
expect_lacks "$TMP/out" "q/k norms"
stages 2 "--qk-layernorm 1" "stages.txt:25:16: error: '--qk-layernorm' takes no value, got '1'"
# --recompute-modules: what selective recomputation recomputes.
stages 0 "--recompute-modules core_attn layernorm" ""
expect_lacks "$TMP/err" "recompute"
expect_contains "$TMP/out" "tokens per step; selective recomputation of core_attn, layernorm"
stages 2 "--recompute-modules moe core_attn" "stages.txt:25:1: error: recompute_modules has moe, a mixture's whole MLP, but model 'llama2_7b' has no experts"
stages 2 "--recompute-modules attn" "stages.txt:25:21: error: '--recompute-modules' takes core_attn, moe_act, layernorm, mla_up_proj, mlp or moe, not 'attn'"
stages 2 "--recompute-modules moe_act" "stages.txt:25:1: error: recompute_modules has moe_act, a mixture's expert activation, but model 'llama2_7b' has no experts"
# Without selective recomputation the modules apply to nothing: said so.
grep -v "^--recompute-granularity" "$TMP/stages.txt" | sed 's/^--recompute-modules moe_act$/--recompute-modules layernorm/' >"$TMP/full_modules.txt"
printf -- '--recompute-granularity full\n--recompute-method uniform\n--recompute-num-layers 1\n' >>"$TMP/full_modules.txt"
expect_status 0 "$DTPLAN" "$plan" --from megatron "$TMP/full_modules.txt"
expect_contains "$TMP/err" "full_modules.txt:25:1: warning: '--recompute-modules' applies to '--recompute-granularity selective'; this job does not recompute selectively"
# --mtp-num-layers: multi-token prediction modules on the last stage; its
# loss's weight changes no time; Megatron-LM runs it without cp.
stages 0 "--mtp-num-layers 1" ""
expect_lacks "$TMP/err" "mtp"
expect_contains "$TMP/out" "6.97 B parameters; 32 layers + 1 multi-token prediction module, hidden 4096,"
stages 0 "--mtp-num-layers 1 --mtp-loss-scaling-factor 0.3" "stages.txt:25:20: warning: Megatron-LM's '--mtp-loss-scaling-factor' is not read: it does not change a step's time or memory"
sed 's/^--context-parallel-size 1$/--context-parallel-size 2/' "$TMP/stages.txt" >"$TMP/mtp_cp.txt"
expect_status 1 "$DTPLAN" "$plan" --from megatron "$TMP/mtp_cp.txt"
expect_contains "$TMP/err" "mtp_cp.txt:26:1: error: cp = 2: Megatron-LM runs multi-token prediction (mtp_layers = 1) without context parallelism only"
stages 2 "--mtp-num-layers -1" "stages.txt:25:18: error: 'mtp_layers' must be at least 0, got -1"
stages 0 "--mtp-num-layers 0" ""
expect_contains "$TMP/out" "6.74 B parameters; 32 layers, hidden 4096,"
# --multi-latent-attention: its ranks and widths, Megatron-LM's defaults
# where unwritten; --qk-layernorm is its compressed tensors' norms.
stages 0 "--multi-latent-attention --qk-layernorm --q-lora-rank 1536 --kv-lora-rank 512" ""
expect_lacks "$TMP/err" "latent"
expect_contains "$TMP/out" "32 heads (32 kv) of multi-latent attention (q rank 1536, kv rank 512; q/k heads 128 + 64 rotary, v heads 128), ffn 11008"
stages 0 "--multi-latent-attention --qk-pos-emb-head-dim 32 --v-head-dim 96" "stages.txt:25:1: warning: Megatron-LM runs this multi-latent attention without its compressed queries' and keys' norms (no --qk-layernorm): costed with them, as DeepSeek's"
expect_contains "$TMP/out" "(q rank none, kv rank 32; q/k heads 128 + 32 rotary, v heads 96)"
stages 0 "--multi-latent-attention --qk-layernorm --tensor-model-parallel-size 2 --sequence-parallel" ""
expect_contains "$TMP/out" "dp 4, tp 2, pp 2, cp 1, zero 1, shard all, checkpoint selective, micro_batch 1, virtual_stages 1, sequence_parallel true,"
expect_lacks "$TMP/err" "latent"
# A launch script's expansion dtplan cannot resolve, after a flag, is more
# arguments it does not read, not the flag's value.
printf 'EXTRA=$(cat extra.txt)\n' >"$TMP/launch.sh"
grep -v "^--pipeline-model-parallel-layout\|^#" "$TMP/ue/megatron/args.txt" | sed 's/^--bf16$/--bf16 $EXTRA/' |
  { printf 'python pretrain_gpt.py \\\n'; sed 's/$/ \\/'; echo; } >>"$TMP/launch.sh"
expect_status 0 "$DTPLAN" "$plan" --from megatron "$TMP/launch.sh"
expect_contains "$TMP/err" "warning: '\$EXTRA' is a shell expansion dtplan cannot resolve: the arguments it gives are not read"
# Megatron-LM refuses to interleave two ranks with batched sends
# (arguments.py:564-573), and a sequence that 2 x cp chunks do not divide
# (:775-778): the checker says so at the argument.
stages 1 "--num-virtual-stages-per-pipeline-rank 2 --no-overlap-p2p-communication" "stages.txt:25:1: error: framework 'megatron' interleaves a pipeline of pp = 2 only with overlap_p2p_comm = true: its batched send and receive would pair the two ranks twice (virtual_stages = 2)"
stages 0 "--num-virtual-stages-per-pipeline-rank 2" ""
sed -e "s/^--seq-length 4096/--seq-length 4100/" -e "s/^--context-parallel-size 1/--context-parallel-size 4/" \
  -e "s/^--pipeline-model-parallel-size 2/--pipeline-model-parallel-size 1/" \
  -e "s/^--pipeline-model-parallel-layout .*//" "$TMP/ue/megatron/args.txt" >"$TMP/cp.txt"
expect_status 1 "$DTPLAN" "$plan" --from megatron "$TMP/cp.txt"
expect_contains "$TMP/err" "cp.txt:26:1: error: framework 'megatron' balances causal attention over 2 x cp = 8 chunks of the sequence, which seq_len = 4100 does not divide into"


# A mixture of experts as Megatron-LM's arguments give it (core_v0.13.0
# arguments.py:2700-2755): the experts, two a token unless written, over ep
# of the data-parallel ranks, whose distributed optimizer shards each
# expert's state over the dp / ep ranks that hold it.
cat >"$TMP/moe.dtp" <<'EOF'
model m { layers = 32; hidden = 4096; heads = 32; kv_heads = 8; ffn = 14336; vocab = 32000; seq_len = 4096; mlp = swiglu }
cluster c { nodes = 4; gpus_per_node = 8; gpu = H100_SXM; inter_node = 8 x 400 Gbit/s }
training { framework = megatron; global_batch = 512 }
strategy s { dp = 32 }
EOF
printf -- '--num-experts 8 --expert-model-parallel-size 8\n--micro-batch-size 1 --global-batch-size 512 --bf16 --use-distributed-optimizer --pipeline-model-parallel-size 2\n' >"$TMP/moe.txt"
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/moe.txt"
expect_contains "$TMP/out" "46.70 B parameters; 32 layers, hidden 4096, 32 heads (8 kv), ffn 14336 swiglu x 8 experts (2 a token),"
expect_contains "$TMP/out" "10.9 GiB  optimizer moments (adam x 8 B, ZeRO-1 over 16, experts over 2)"
expect_contains "$TMP/out" "dp 16, tp 1, pp 2, cp 1, ep 8, zero 1, shard all,"
# Megatron-LM's default dispatcher gathers every token of the ep ranks
# (the buffer it keeps, its gathers and scatters) and costs more than the
# all-to-alls of each token's two copies.
expect_lacks "$TMP/err" "warning"
expect_contains "$TMP/out" "256.0 MiB  allgather token dispatcher's buffer (8 ranks' tokens, s.b.h/t each)"
expect_contains "$TMP/out" "    all-gather      ep            8   256.0 MiB    512 intra     342 ms     342 ms"
expect_contains "$TMP/out" "time per step                      10.6 s"
printf -- '--moe-token-dispatcher-type alltoall\n' >>"$TMP/moe.txt"
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/moe.txt"
expect_lacks "$TMP/err" "warning"
expect_contains "$TMP/out" "time per step                      9.56 s"
expect_lacks "$TMP/out" "dispatcher's buffer"
# The README's claims for NeMo's DeepSeek-V3 recipe's search, with the
# recipe's uneven first and last stages and without them.
expect_status 0 "$DTPLAN" plans/deepseek_v3_megatron.dtp --optimize --quiet
expect_contains "$TMP/out" "search#1: valid, 19.5 s per step, 861 k tokens/s, MFU 24.8 %, 73.1 GiB per GPU"
expect_status 0 "$DTPLAN" plans/deepseek_v3_megatron.dtp --optimize
expect_contains "$TMP/out" "  layers 3 on stage 0, 4 on stages 1-14, 2 on stage 15; each micro-batch costed as 4 layers and the logits and loss (an upper bound)"
grep -v "^  num_layers_in_" plans/deepseek_v3_megatron.dtp >"$TMP/deepseek_even.dtp"
expect_status 0 "$DTPLAN" "$TMP/deepseek_even.dtp" --optimize --quiet
expect_contains "$TMP/out" "search#1: valid, 15.2 s per step, 1.10 M tokens/s, MFU 31.8 %, 68.9 GiB per GPU"
# Where DeepEP would be faster the report says so, verified (NeMo's
# Qwen3-30B-A3B recipe: ep 4 inside a node, 8 of 128 experts a token reach
# 3.6 of the 4 GPUs instead of 8 copies); not where the plan runs it.
expect_status 0 "$DTPLAN" plans/qwen3_30b_a3b_megatron.dtp
expect_contains "$TMP/out" "    - experts: the tokens go to their experts as top-k copies (moe_token_dispatcher = alltoall); moe_token_dispatcher = flex sends each once to each GPU and node its experts are on, forwarded inside a node over NVLink (DeepEP: Megatron-LM's --moe-token-dispatcher-type flex --moe-enable-deepep) (step 2.36 s instead of 2.53 s)"
expect_status 0 "$DTPLAN" plans/qwen3_30b_a3b_megatron.dtp --set training.moe_token_dispatcher=flex --quiet
expect_contains "$TMP/out" "recipe: valid, 2.36 s per step"
expect_status 0 "$DTPLAN" plans/deepseek_v3_megatron.dtp --strategy recipe
expect_lacks "$TMP/out" "moe_token_dispatcher = flex sends"
expect_contains "$TMP/out" " x 256 experts (8 a token from 4 of 8 groups) + a shared expert 2048 wide"
expect_status 0 "$DTPLAN" plans/deepseek_v3_megatron.dtp --strategy recipe --format json
expect_contains "$TMP/out" '"router_groups": 8,'
expect_contains "$TMP/out" '"router_group_topk": 4,'
# The README's two figures for the gathering dispatcher.
expect_status 0 "$DTPLAN" plans/mixtral_8x7b_4node_h100.dtp --set training.moe_token_dispatcher=allgather --quiet
expect_contains "$TMP/out" "example: valid, 5.57 s per step"
expect_status 0 "$DTPLAN" plans/qwen3_30b_a3b_megatron.dtp --set training.moe_token_dispatcher=allgather --quiet
expect_contains "$TMP/out" "recipe: valid, 2.41 s per step"
printf -- '--moe-token-dispatcher-type scatter\n' >>"$TMP/moe.txt"
expect_status 2 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/moe.txt"
expect_contains "$TMP/err" "moe.txt:4:29: error: '--moe-token-dispatcher-type' takes allgather, alltoall or flex, not 'scatter'"
sed -i '$d' "$TMP/moe.txt"
# flex is DeepEP's: Megatron-Core runs it with --moe-enable-deepep only,
# and that flag with it only (core_v0.13.0 token_dispatcher.py:1160-1162,
# transformer_config.py:719-721).
printf -- '--moe-token-dispatcher-type flex\n' >>"$TMP/moe.txt"
expect_status 2 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/moe.txt"
expect_contains "$TMP/err" "moe.txt:4:29: error: '--moe-token-dispatcher-type flex' runs DeepEP, which needs '--moe-enable-deepep': Megatron-Core asserts it"
printf -- '--moe-enable-deepep --moe-router-num-groups 4 --moe-router-group-topk 2\n' >>"$TMP/moe.txt"
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/moe.txt" --dump ir
expect_lacks "$TMP/err" "warning"
expect_contains "$TMP/out" "  moe_token_dispatcher flex"
expect_contains "$TMP/out" "  router_groups     4"
expect_contains "$TMP/out" "  router_group_topk 2"
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/moe.txt"
expect_contains "$TMP/out" "    all-to-all      ep            8    64.0 MiB"
sed -i 's/^--moe-token-dispatcher-type flex$/--moe-token-dispatcher-type alltoall/' "$TMP/moe.txt"
expect_status 2 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/moe.txt"
expect_contains "$TMP/err" "moe.txt:5:1: error: '--moe-enable-deepep' needs '--moe-token-dispatcher-type flex', not alltoall: Megatron-Core refuses DeepEP with another dispatcher"
sed -i '$d' "$TMP/moe.txt"
sed -i '$d' "$TMP/moe.txt"
# Without --moe-grouped-gemm Megatron-LM runs the local experts one after
# another (SequentialMLP; core_v0.13.0 transformer_config.py:461): read as
# grouped_gemm = false, which costs 4 experts a GPU (ep 2) more than the flag.
printf -- '--num-experts 8 --expert-model-parallel-size 2 --moe-token-dispatcher-type alltoall\n--micro-batch-size 1 --global-batch-size 512 --bf16 --use-distributed-optimizer --pipeline-model-parallel-size 4 --recompute-granularity full --recompute-method uniform --recompute-num-layers 1\n' >"$TMP/moe_seq.txt"
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/moe_seq.txt" --dump ir
expect_contains "$TMP/out" "  grouped_gemm      false"
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/moe_seq.txt"
expect_lacks "$TMP/err" "warning"
expect_contains "$TMP/out" "time per step                      13.2 s"
# The advice names the flag, verified; the fused permutation saves under 1 %
# here and is not advised.
expect_contains "$TMP/out" "    - experts: the 4 experts on each GPU run one after another (grouped_gemm = false); grouped_gemm = true runs each expert matrix as one grouped GEMM (Megatron-LM's --moe-grouped-gemm, torchtitan's use_grouped_mm) (step 13.0 s instead of 13.2 s)"
expect_lacks "$TMP/out" "permute_fusion = false"
printf -- '--moe-grouped-gemm\n' >>"$TMP/moe_seq.txt"
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/moe_seq.txt"
expect_lacks "$TMP/err" "warning"
expect_contains "$TMP/out" "time per step                      13.0 s"
# --moe-permute-fusion: Transformer Engine's fused permutation, fewer kernels
# for the same bytes (transformer_config.py:513 leaves it off); Mixtral's
# layers are long enough that 13 kernels fewer a layer do not show.
printf -- '--moe-permute-fusion\n' >>"$TMP/moe_seq.txt"
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/moe_seq.txt" --dump ir
expect_contains "$TMP/out" "  permute_fusion    true"
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/moe_seq.txt"
expect_lacks "$TMP/err" "warning"
expect_contains "$TMP/out" "time per step                      13.0 s"
# An expert capacity, tokens padded up to it (--moe-expert-capacity-factor,
# --moe-pad-expert-input-to-capacity): read, written and read back the same.
printf -- '--num-experts 8 --expert-model-parallel-size 8 --moe-token-dispatcher-type alltoall --moe-expert-capacity-factor 1.25 --moe-pad-expert-input-to-capacity\n--micro-batch-size 1 --global-batch-size 512 --bf16 --use-distributed-optimizer --pipeline-model-parallel-size 2\n' >"$TMP/cap.txt"
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/cap.txt" --dump ir
expect_contains "$TMP/out" "  capacity_factor   1.25"
expect_contains "$TMP/out" "  pad_to_capacity   true"
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/cap.txt" --emit "$TMP/cap_job" --quiet
expect_lacks "$TMP/err" "warning"
cp "$TMP/out" "$TMP/cap_planned"
expect_contains "$TMP/cap_job/megatron/args.txt" "--moe-expert-capacity-factor 1.25"
expect_contains "$TMP/cap_job/megatron/args.txt" "--moe-pad-expert-input-to-capacity"
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/cap_job/megatron/args.txt" --quiet
expect_same_cost "$TMP/out" "$TMP/cap_planned" "the capacity read back costs otherwise"
# Dense layers among the mixtures (--moe-layer-freq): a run of dense
# layers first, then every N-th a mixture, from a list or an integer
# (Megatron-LM's: layers 0, N, 2N, ...); another list is costed as every
# layer a mixture, and the warning says so.
freq_job() {
  printf -- '--num-experts 8 --expert-model-parallel-size 8 --moe-token-dispatcher-type alltoall --moe-layer-freq %s\n--micro-batch-size 1 --global-batch-size 512 --bf16 --use-distributed-optimizer --pipeline-model-parallel-size 2\n' "$1" >"$TMP/freq.txt"
}
freq_job '([0]*3+[1]*29)'
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/freq.txt" --dump ir
expect_contains "$TMP/out" "  dense_layers      3"
expect_lacks "$TMP/err" "warning"
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/freq.txt"
expect_contains "$TMP/out" "x 8 experts (2 a token) in 29 of 32 layers, the others dense ffn 14336"
freq_job '[0,1]*16'
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/freq.txt" --dump ir
expect_contains "$TMP/out" "  dense_layers      1"
expect_contains "$TMP/out" "  moe_layer_freq    2"
freq_job 4
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/freq.txt" --dump ir
expect_contains "$TMP/out" "  moe_layer_freq    4"
expect_contains "$TMP/out" "  dense_layers      0"
# Written back in its other two forms: dense layers first then every
# layer a mixture, and Megatron-LM's integer.
for form in "([0]*3+[1]*29)='[0]*3+[1]*29'" '4=4'; do
  freq_job "${form%%=*}"
  expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/freq.txt" --emit "$TMP/freq_form" --force --quiet
  expect_contains "$TMP/freq_form/megatron/args.txt" "--moe-layer-freq ${form#*=}"
done
freq_job '([1]*3+[0]*1)*8'
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/freq.txt"
expect_contains "$TMP/err" "freq.txt:1:85: warning: Megatron-LM's MoE layer pattern '([1]*3+[0]*1)*8' is not modelled: costed as '1: every layer a mixture of experts (dtplan says dense layers first, then every N-th a mixture)'"
# Written back as Megatron-LM reads it, and read back the same; torchtitan's
# qwen3 model has no dense layers.
freq_job '[0,1]*16'
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/freq.txt" --emit "$TMP/freq_job" --quiet
cp "$TMP/out" "$TMP/freq_planned"
expect_contains "$TMP/freq_job/megatron/args.txt" "--moe-layer-freq '[0]*1+([1]+[0]*1)*15+[1]'"
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/freq_job/megatron/args.txt" --quiet
expect_same_cost "$TMP/out" "$TMP/freq_planned" "the dense layers read back cost otherwise"
expect_status 2 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/freq.txt" --set training.framework=torchtitan --set strategy.zero=3 --emit "$TMP/freq_tt" --framework torchtitan --quiet
expect_contains "$TMP/err" "torchtitan's qwen3 model makes every layer a mixture of experts; model 'm' has 16 dense layers (dense_layers, moe_layer_freq)"
freq_job '[0]*3+[1]*28'
expect_status 2 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/freq.txt"
expect_contains "$TMP/err" "freq.txt:1:102: error: '--moe-layer-freq' names 31 layers; the model has 32"
freq_job '[0]*3+[1'
expect_status 2 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/freq.txt"
expect_contains "$TMP/err" "freq.txt:1:102: error: '--moe-layer-freq' is not a list of 0 and 1 as Megatron-LM evaluates it (such as \"([0]*3+[1]*58)\"): '[0]*3+[1'"
# Padding without a capacity is Megatron-LM's error too.
printf -- '--num-experts 8 --moe-pad-expert-input-to-capacity\n--micro-batch-size 1 --global-batch-size 512 --bf16\n' >"$TMP/pad.txt"
expect_status 2 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/pad.txt"
expect_contains "$TMP/err" "pad.txt:1:17: error: 'pad_to_capacity' pads each expert's input to its capacity, but 'capacity_factor' is not set"
# A dense job's dispatcher does nothing, and is said to be unread.
printf -- '--moe-token-dispatcher-type alltoall --micro-batch-size 1 --global-batch-size 512 --bf16 --use-distributed-optimizer\n' >"$TMP/dense.txt"
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/dense.txt"
expect_contains "$TMP/err" "dense.txt:1:1: warning: Megatron-LM's '--moe-token-dispatcher-type' is not modelled: the plan is costed without it"
printf -- '--moe-grouped-gemm\n' >>"$TMP/dense.txt"
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/dense.txt"
expect_contains "$TMP/err" "dense.txt:2:1: warning: '--moe-grouped-gemm' does not apply to this job: not read"
cat >"$TMP/moe_free.dtp" <<'EOF'
model m { layers = 32; hidden = 4096; heads = 32; kv_heads = 8; ffn = 14336; vocab = 32000; seq_len = 4096; mlp = swiglu; experts = 8; experts_per_token = 2 }
cluster c { nodes = 4; gpus_per_node = 8; gpu = H100_SXM; inter_node = 8 x 400 Gbit/s }
training { framework = megatron; global_batch = 512 }
strategy free { dp = 16; pp = 2; ep = {4, 8}; zero = 1; checkpoint = full; micro_batch = 1 }
EOF
expect_status 0 "$DTPLAN" "$TMP/moe_free.dtp" --optimize --top 2
# ep 8 over ep 4: one expert a GPU, nothing to sort by expert after the all-to-all.
expect_contains "$TMP/out" "dp 16, tp 1, pp 2, cp 1, ep 8, zero 1,"
expect_contains "$TMP/out" "differs from 'free#1' in ep 4 (not 8)"
# Written as a Megatron-LM job and read back, the mixture costs the same.
expect_status 0 "$DTPLAN" "$TMP/moe_free.dtp" --optimize --top 1 --emit "$TMP/moe_job" --quiet
expect_contains "$TMP/moe_job/megatron/args.txt" "--num-experts 8"
expect_contains "$TMP/moe_job/megatron/args.txt" "--moe-router-topk 2"
expect_contains "$TMP/moe_job/megatron/args.txt" "--expert-model-parallel-size 8"
expect_contains "$TMP/moe_job/megatron/args.txt" "--moe-token-dispatcher-type alltoall"
expect_contains "$TMP/moe_job/megatron/args.txt" "--moe-grouped-gemm"
expect_contains "$TMP/moe_job/megatron/args.txt" "--moe-permute-fusion"
cp "$TMP/out" "$TMP/moe_planned"
expect_status 0 "$DTPLAN" "$TMP/moe_free.dtp" --from megatron "$TMP/moe_job/megatron/args.txt" --quiet
expect_same_cost "$TMP/out" "$TMP/moe_planned" "the mixture read back costs otherwise"
expect_lacks "$TMP/err" "warning"
# Heads of their own width: torchtitan's llama3 has none (head_dim is
# dim / n_heads there), its qwen3 does; the flavor to register says it.
expect_status 0 "$DTPLAN" plans/8b_torchtitan_h100.dtp --set model.head_dim=64 --strategy fsdp --emit "$TMP/tt_head"
expect_contains "$TMP/tt_head/torchtitan/job.toml" 'name = "qwen3"'
expect_contains "$TMP/tt_head/torchtitan/job.toml" "# (dim=4096, n_layers=32, n_heads=32, n_kv_heads=8, head_dim=64, vocab_size=128256, hidden_dim=14336, qk_norm=False)."
expect_status 0 "$DTPLAN" plans/qwen_moe_a2_7b_torchtitan.dtp --set model.head_dim=256 --strategy fsdp_ep4 --emit "$TMP/tt_moe_head"
expect_contains "$TMP/tt_moe_head/torchtitan/job.toml" "n_heads=16, n_kv_heads=16, head_dim=256, vocab_size=151936, moe_enabled=True,"
# A model that is one of torchtitan's own qwen3 flavors is written as it,
# and read back as the catalog's, with the file's model or without one.
expect_status 0 "$DTPLAN" plans/qwen3_30b_a3b_megatron.dtp --strategy recipe --set strategy.zero=3 \
  --set strategy.checkpoint=full --set training.framework=torchtitan --emit "$TMP/tt_qwen3" --quiet
cp "$TMP/out" "$TMP/tt_qwen3_planned"
expect_contains "$TMP/tt_qwen3/torchtitan/job.toml" 'flavor = "30B-A3B"'
expect_lacks "$TMP/tt_qwen3/torchtitan/job.toml" "Register"
printf 'cluster dgx_h100 { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n' >"$TMP/tt_qwen3_cluster.dtp"
expect_status 0 "$DTPLAN" "$TMP/tt_qwen3_cluster.dtp" --from torchtitan "$TMP/tt_qwen3/torchtitan/job.toml" --quiet
expect_same_cost "$TMP/out" "$TMP/tt_qwen3_planned" "the catalog's Qwen3-30B-A3B read back from its flavor costs otherwise"
expect_status 0 "$DTPLAN" plans/qwen3_30b_a3b_megatron.dtp --from torchtitan "$TMP/tt_qwen3/torchtitan/job.toml" --quiet
expect_same_cost "$TMP/out" "$TMP/tt_qwen3_planned" "Qwen3-30B-A3B read back onto its plan costs otherwise"
expect_lacks "$TMP/err" "is costed"
# torchtitan's experts are grouped unless the model's flavor says otherwise,
# which its job file cannot: a plan costed one after another says so.
expect_status 0 "$DTPLAN" plans/qwen_moe_a2_7b_torchtitan.dtp --set training.grouped_gemm=false --strategy fsdp_ep4 --emit "$TMP/qwen_seq"
expect_contains "$TMP/err" "<--set>:1:10: warning: the plan was costed with grouped_gemm = false; a torchtitan job cannot say it and runs true"
expect_contains "$TMP/out" "time per step                      4.92 s"
# torchtitan's shared expert runs while the combine's all-to-all is in
# flight; Megatron-LM cannot run it so (it has a stream of its own instead).
expect_status 0 "$DTPLAN" plans/qwen_moe_a2_7b_torchtitan.dtp --strategy fsdp_ep4 --set training.framework=megatron \
  --set training.shared_expert_overlap=false --set training.shared_expert_combine_overlap=true \
  --set strategy.zero=1 --set strategy.checkpoint=selective --emit "$TMP/qwen_combine"
expect_contains "$TMP/err" "warning: the plan was costed with shared_expert_combine_overlap = true; a megatron job cannot say it and runs false"
# Under Megatron-LM without --moe-shared-expert-overlap the all-to-alls wait
# in line; the advice shows what the flag saves.
expect_status 0 "$DTPLAN" plans/qwen_moe_a2_7b_torchtitan.dtp --set training.framework=megatron \
  --set training.shared_expert_overlap=false --set strategy.zero=1 --set strategy.checkpoint=selective --strategy fsdp_ep4
expect_contains "$TMP/out" "    - experts: the shared expert runs in line with the all-to-alls (shared_expert_overlap = false); shared_expert_overlap = true runs it on a stream of its own beneath them (Megatron-LM's --moe-shared-expert-overlap) (step 2.41 s instead of 2.61 s)"
expect_status 2 "$DTPLAN" "$TMP/moe_free.dtp" --optimize --top 1 --emit "$TMP/moe_tt" --framework torchtitan --quiet
expect_contains "$TMP/err" "error: cannot write plan 'free#1' as a torchtitan job: torchtitan does not run ZeRO-1 (zero = 1): it runs zero = 0 or 3"
printf -- '--num-experts 6 --moe-router-topk 1 --expert-model-parallel-size 4 --expert-tensor-parallel-size 1 --moe-ffn-hidden-size 2048\n--micro-batch-size 1 --global-batch-size 512 --bf16 --tensor-model-parallel-size 2\n' >"$TMP/moe.txt"
expect_status 1 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/moe.txt"
# --expert-tensor-parallel-size 1: each expert whole on its rank, which needs
# sequence parallelism (Megatron-LM asserts it for a mixture with tp > 1).
expect_contains "$TMP/err" "moe.txt:1:68: error: etp = 1 below tp = 2 needs sequence_parallel = true: each tensor-parallel rank sends its own tokens to the experts"
expect_contains "$TMP/out" "dp 16, tp 2, pp 1, cp 1, ep 4, etp 1, zero 0,"
expect_lacks "$TMP/err" "MLP width"
expect_contains "$TMP/out" "ffn 2048 swiglu x 6 experts (1 a token)"
expect_contains "$TMP/err" "moe.txt:1:37: error: ep = 4 does not divide experts = 6"
expect_contains "$TMP/out" "x 6 experts (1 a token)"
# An expert split other than 1 or tp is costed at tp, and said so.
printf -- '--num-experts 8 --expert-model-parallel-size 4 --expert-tensor-parallel-size 2 --moe-token-dispatcher-type alltoall\n--micro-batch-size 1 --global-batch-size 512 --bf16 --tensor-model-parallel-size 4 --sequence-parallel\n' >"$TMP/moe2.txt"
expect_status 0 "$DTPLAN" "$TMP/moe.dtp" --from megatron "$TMP/moe2.txt"
expect_contains "$TMP/err" "moe2.txt:1:48: warning: Megatron-LM's expert tensor-parallel size '2' is not modelled: costed as '4 (tp)'"
expect_contains "$TMP/out" "dp 8, tp 4, pp 1, cp 1, ep 4, zero 0,"
# etp 1 planned, written as a Megatron-LM job and read back: the same cost.
# The experts 4096 wide (--moe-ffn-hidden-size), the dense ffn unused, and a
# shared expert (--moe-shared-expert-intermediate-size).
sed -e 's/strategy free { dp = 16; pp = 2; ep = {4, 8};/strategy free { dp = 8; tp = 2; pp = 2; ep = 8; etp = 1;/' \
  -e 's/experts_per_token = 2 }/experts_per_token = 2; expert_ffn = 4096; shared_expert_ffn = 2048 }/' "$TMP/moe_free.dtp" >"$TMP/moe_whole.dtp"
expect_status 0 "$DTPLAN" "$TMP/moe_whole.dtp" --strategy free --emit "$TMP/moe_whole_job" --quiet
cp "$TMP/out" "$TMP/moe_whole_planned"
expect_contains "$TMP/moe_whole_job/megatron/args.txt" "--expert-tensor-parallel-size 1"
expect_contains "$TMP/moe_whole_job/megatron/args.txt" "--moe-ffn-hidden-size 4096"
expect_contains "$TMP/moe_whole_job/megatron/args.txt" "--moe-shared-expert-intermediate-size 2048"
# The megatron preset runs the shared expert beside the all-to-alls, as
# NeMo's DeepSeek and Llama 4 configs do; Megatron-LM needs the flag.
expect_contains "$TMP/moe_whole_job/megatron/args.txt" "--moe-shared-expert-overlap"
expect_status 0 "$DTPLAN" "$TMP/moe_whole.dtp" --from megatron "$TMP/moe_whole_job/megatron/args.txt" --quiet
expect_same_cost "$TMP/out" "$TMP/moe_whole_planned" "etp 1 read back costs otherwise"
expect_lacks "$TMP/err" "warning"

# torchtitan's experts (v0.2.0 parallel_dims.py:57-64): ep of the dp_shard x
# cp ranks; without tensor parallelism (its default) when tp > 1, the ep
# group then spanning the tp ranks too (etp 1), in whole tp x cp blocks.
sed 's/framework = megatron/framework = torchtitan/; s/strategy s { dp = 32 }/strategy s { dp = 32; zero = 3 }/; s/mlp = swiglu }/mlp = swiglu; experts = 8; experts_per_token = 2 }/' \
  "$TMP/moe.dtp" >"$TMP/tt_moe.dtp"
printf '[training]\nlocal_batch_size = 1\nseq_len = 4096\n[parallelism]\nexpert_parallel_degree = 8\n' >"$TMP/moe.toml"
expect_status 0 "$DTPLAN" "$TMP/tt_moe.dtp" --from torchtitan "$TMP/moe.toml"
expect_contains "$TMP/out" "5.4 GiB  gradients (fp32, 7.24B params x 4 B, ZeRO-3 over 32, experts over 4)"
expect_lacks "$TMP/err" "expert"
printf 'tensor_parallel_degree = 2\n' >>"$TMP/moe.toml"
expect_status 0 "$DTPLAN" "$TMP/tt_moe.dtp" --from torchtitan "$TMP/moe.toml"
expect_contains "$TMP/out" "dp 16, tp 2, pp 1, cp 1, ep 8, etp 1, zero 3,"
expect_contains "$TMP/out" "5.4 GiB  gradients (fp32, 6.44B params x 4 B, ZeRO-3 over 16, experts over 4)"
expect_lacks "$TMP/err" "expert"
{ cat "$TMP/moe.toml"; printf 'context_parallel_degree = 8\n'; } >"$TMP/moe_cp.toml"
expect_status 2 "$DTPLAN" "$TMP/tt_moe.dtp" --from torchtitan "$TMP/moe_cp.toml"
expect_contains "$TMP/err" "moe_cp.toml:5:26: error: torchtitan's 'parallelism.expert_parallel_degree' 8 with experts whole on each rank (expert_tensor_parallel_degree = 1) must be a multiple of tensor x context degrees = 16"
# Planned for torchtitan and written as its job: Qwen3's mixture code, the
# dp2ep degrees; read back, the same cost.
sed 's/strategy s { dp = 32; zero = 3 }/strategy s { tp = 2; ep = 8; etp = 1; zero = 3 }/' "$TMP/tt_moe.dtp" >"$TMP/tt_moe_plan.dtp"
expect_status 0 "$DTPLAN" "$TMP/tt_moe_plan.dtp" --emit "$TMP/tt_moe_job" --framework torchtitan --quiet
cp "$TMP/out" "$TMP/tt_moe_planned"
expect_contains "$TMP/tt_moe_job/torchtitan/job.toml" 'name = "qwen3"'
expect_contains "$TMP/tt_moe_job/torchtitan/job.toml" "# qk_norm=False, moe_inter_dim=14336, moe_args=MoEArgs(num_experts=8, num_shared_experts=0, top_k=2))."
expect_contains "$TMP/tt_moe_job/torchtitan/job.toml" "expert_parallel_degree = 8"
expect_contains "$TMP/tt_moe_job/torchtitan/job.toml" "expert_tensor_parallel_degree = 1"
expect_status 0 "$DTPLAN" "$TMP/tt_moe_plan.dtp" --from torchtitan "$TMP/tt_moe_job/torchtitan/job.toml" --quiet
expect_same_cost "$TMP/out" "$TMP/tt_moe_planned" "the torchtitan mixture read back costs otherwise"
expect_lacks "$TMP/err" "warning"
# A grid torchtitan's dp2ep mesh cannot form, planned under another
# framework: its job is refused with the checker's rule.
sed 's/framework = torchtitan/framework = generic/; s/strategy s { tp = 2; ep = 8; etp = 1; zero = 3 }/strategy s { tp = 2; etp = 1; zero = 3 }/' \
  "$TMP/tt_moe_plan.dtp" >"$TMP/generic_whole.dtp"
expect_status 2 "$DTPLAN" "$TMP/generic_whole.dtp" --emit "$TMP/generic_whole_job" --framework torchtitan --quiet
expect_contains "$TMP/err" "torchtitan keeps experts whole on a rank (etp = 1) only with ep > 1; with ep = 1 it splits them over tp = 2"
# disable_loss_parallel (T17): the logits gathered over tp, the whole
# vocabulary's loss on every rank; written back by --emit, the same cost.
sed 's/strategy s { dp = 32; zero = 3 }/strategy s { tp = 2; dp = 16; zero = 3 }/; s/; experts = 8; experts_per_token = 2//' \
  "$TMP/tt_moe.dtp" >"$TMP/tt_dense.dtp"
printf '[training]\nlocal_batch_size = 1\nseq_len = 4096\n[parallelism]\ntensor_parallel_degree = 2\ndisable_loss_parallel = true\n' >"$TMP/lp.toml"
expect_status 0 "$DTPLAN" "$TMP/tt_dense.dtp" --from torchtitan "$TMP/lp.toml"
expect_contains "$TMP/out" "1.5 GiB  unfused cross entropy backward: log_softmax output, its gradient and the logits' gradient (3 x fp32 x s.b.vocab, gathered over tp, vocab padded to 32000)"
expect_contains "$TMP/out" "    all-gather      tp            2   250.0 MiB      1 intra"
expect_lacks "$TMP/err" "disable_loss_parallel"
sed 's/training { framework = torchtitan;/training { framework = torchtitan; loss_parallel = false;/' "$TMP/tt_dense.dtp" >"$TMP/tt_gathered.dtp"
expect_status 0 "$DTPLAN" "$TMP/tt_gathered.dtp" --emit "$TMP/tt_gathered_job" --quiet
cp "$TMP/out" "$TMP/tt_gathered_planned"
expect_contains "$TMP/tt_gathered_job/torchtitan/job.toml" "disable_loss_parallel = true"
expect_status 0 "$DTPLAN" "$TMP/tt_dense.dtp" --from torchtitan "$TMP/tt_gathered_job/torchtitan/job.toml" --quiet
expect_same_cost "$TMP/out" "$TMP/tt_gathered_planned" "disable_loss_parallel read back costs otherwise"
# A shared expert torchtitan cannot build: not a multiple of the experts' width.
sed 's/experts_per_token = 2 }/experts_per_token = 2; shared_expert_ffn = 1000 }/' "$TMP/tt_moe_plan.dtp" >"$TMP/tt_moe_shared.dtp"
expect_status 2 "$DTPLAN" "$TMP/tt_moe_shared.dtp" --emit "$TMP/tt_moe_shared_job" --framework torchtitan --quiet
expect_contains "$TMP/err" "torchtitan's shared experts are each as wide as the routed ones: shared_expert_ffn = 1000 is not a multiple of the experts' 14336"
printf 'expert_tensor_parallel_degree = 4\n' >>"$TMP/moe.toml"
expect_status 2 "$DTPLAN" "$TMP/tt_moe.dtp" --from torchtitan "$TMP/moe.toml"
expect_contains "$TMP/err" "moe.toml:7:33: error: torchtitan runs 'parallelism.expert_tensor_parallel_degree' 1 or the tensor-parallel degree 2, not 4"

# A hostile file name reaches the jobs only as escaped comment text: every
# line of args.txt is a comment or an argument, the TOML reads back whole,
# and bash parses the launch scripts without running anything of it.
root=$PWD
mkdir "$TMP/h" && cd "$TMP/h" || exit 1
hostile="a
\$(touch pwned)\`touch pwned\`'\"x.dtp"
cp "$root/$plan" "$hostile"
for fw in torchtitan megatron deepspeed; do
  runs=(--set current.zero=1)  # torchtitan: FSDP with its op-level checkpointing
  [ "$fw" = torchtitan ] && runs=(--set current.zero=3 --set current.checkpoint=ops)
  expect_status 0 "$DTPLAN" "$hostile" --strategy current "${runs[@]}" --set training.framework=$fw \
    --emit "h-$fw" --quiet
  checks=$((checks + 1))
  bash -n "h-$fw/$fw/launch.sh" || fail "h-$fw/$fw/launch.sh does not parse"
done
checks=$((checks + 1))
bad=$(grep -v -e '^#' -e '^--' h-megatron/megatron/args.txt h-deepspeed/deepspeed/args.txt)
[ -z "$bad" ] || fail "args.txt lines that are neither comment nor argument: $bad"
expect_status 0 "$DTPLAN" "$root/$plan" --from torchtitan h-torchtitan/torchtitan/job.toml --quiet
expect_contains "$TMP/out" "torchtitan: valid"
expect_status 0 "$DTPLAN" "$root/$plan" --from megatron h-megatron/megatron/args.txt --quiet
expect_contains "$TMP/out" "megatron: valid"
checks=$((checks + 1))
[ ! -e pwned ] || fail "the file name ran"
cd "$root" || exit 1
finish
