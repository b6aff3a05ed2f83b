# No input crashes or hangs the driver: truncated, binary, huge and deeply
# nested files each end with a diagnostic and exit status 2.
source "$(dirname "$0")/lib.sh"

plan=plans/7b_2node.dtp
size=$(wc -c <"$plan")
for cut in 1 7 40 100 200 333 500 700 $((size - 3)); do
  [ "$cut" -lt "$size" ] || continue
  head -c "$cut" "$plan" >"$TMP/trunc.dtp"
  start=$(date +%s%N)
  expect_status 2 "$DTPLAN" "$TMP/trunc.dtp"
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "truncated at $cut bytes: exit 2 in $ms ms"
  expect_contains "$TMP/err" "trunc.dtp:"
  expect_contains "$TMP/err" "error:"
done

# Endless or unreadable inputs end with the reason, at once.
expect_status 2 "$DTPLAN" /dev/zero
expect_contains "$TMP/err" "dtplan: error: cannot read '/dev/zero': it holds more than 16 MiB, the most a .dtp file may hold"
expect_status 2 "$DTPLAN" "$TMP"
expect_contains "$TMP/err" "dtplan: error: cannot read '$TMP': it is a directory"
checks=$((checks + 1))
head -c 20000000 /dev/zero | timeout 10 "$DTPLAN" - >"$TMP/out" 2>"$TMP/err"
[ $? = 2 ] || fail "20 MB on standard input: expected exit 2"
expect_contains "$TMP/err" "dtplan: error: cannot read the standard input: it holds more than 16 MiB"

head -c 4096 /dev/urandom >"$TMP/binary.dtp"
expect_status 2 "$DTPLAN" "$TMP/binary.dtp"
expect_contains "$TMP/err" "file is not text"

: >"$TMP/empty.dtp"
expect_status 2 "$DTPLAN" "$TMP/empty.dtp"
expect_contains "$TMP/err" "file is empty"

# 10 MB: a valid head followed by a long run of junk assignments.
{ cat "$plan"; yes 'strategy s { tp = 2 pp = 3 }' | head -c 10000000; } >"$TMP/huge.dtp"
start=$(date +%s%N)
expect_status 2 "$DTPLAN" "$TMP/huge.dtp"
echo "10 MB file: exit 2 in $(( ($(date +%s%N) - start) / 1000000 )) ms"
expect_contains "$TMP/err" "huge.dtp:"

# 100,000 nested braces and brackets.
{ printf 'model m {\n layers = '; head -c 100000 /dev/zero | tr '\0' '{'; } >"$TMP/deep.dtp"
start=$(date +%s%N)
expect_status 2 "$DTPLAN" "$TMP/deep.dtp"
echo "100,000-deep braces: exit 2 in $(( ($(date +%s%N) - start) / 1000000 )) ms"
expect_contains "$TMP/err" "deep.dtp:2:"

printf 'model m {\n layers = 99999999999999999999999\n}\n' >"$TMP/overflow.dtp"
expect_status 2 "$DTPLAN" "$TMP/overflow.dtp"
expect_contains "$TMP/err" "does not fit in 64 bits"

# One GPU, one layer: counts read as counts ("1 GPU", "1 layer"), and a
# strategy the cluster cannot hold still says its micro-batches a step;
# where the batch does not split into them the report says nothing of them.
cat >"$TMP/one.dtp" <<'EOF2'
model m : llama2_7b { layers = 1 }
cluster c { nodes = 1; gpus_per_node = 1; gpu = H100_SXM }
training { global_batch = 8 }
strategy s { dp = 2; pp = 2 }
strategy t { virtual_stages = 2 }
strategy u { micro_batch = 3 }
EOF2
expect_status 1 "$DTPLAN" "$TMP/one.dtp"
expect_contains "$TMP/err" "one.dtp:4:22: error: pp = 2 exceeds the 1 GPU of cluster 'c'"
expect_contains "$TMP/err" "one.dtp:5:14: error: virtual_stages = 2 exceeds the 1 layer of model 'm'"
expect_contains "$TMP/out" "1 layer, hidden 4096, 32 heads (32 kv)"
expect_contains "$TMP/out" "global batch 8 sequences = "
printf 'model m : llama2_7b { layers = 2; heads = 1; kv_heads = 1 }\ncluster c { nodes = 1; gpus_per_node = 1; gpu = H100_SXM }\ntraining { global_batch = 1 }\nstrategy s { dp = 1 }\n' \
  >"$TMP/single.dtp"
expect_status 0 "$DTPLAN" "$TMP/single.dtp"
expect_contains "$TMP/out" "2 layers, hidden 4096, 1 head (1 kv)"
expect_contains "$TMP/out" "global batch 1 sequence = 4.10 k tokens per step"
expect_status 1 "$DTPLAN" "$TMP/one.dtp"
sed -n "/^strategy 's'/,/^$/p" "$TMP/out" >"$TMP/s.txt"
sed -n "/^strategy 'u'/,/^$/p" "$TMP/out" >"$TMP/u.txt"
expect_contains "$TMP/s.txt" "  grad_accum 4"
expect_contains "$TMP/u.txt" "  error: global_batch = 8 is not divisible by dp x micro_batch = 3"
expect_lacks "$TMP/u.txt" "grad_accum"
expect_status 1 "$DTPLAN" "$TMP/one.dtp" --format json
grep -A1 '"micro_batch": 3,' "$TMP/out" >"$TMP/u.json"
expect_contains "$TMP/u.json" '"grad_accum": 0,'

# Degrees and batches whose product passes 2^63 (or wraps to 0) are an
# error, not a division by zero: each importer multiplies a job's figures.
printf '{"train_batch_size": 4611686018427387904, "train_micro_batch_size_per_gpu": 4611686018427387904, "gradient_accumulation_steps": 4}\n' \
  >"$TMP/wrap.json"
expect_status 2 "$DTPLAN" plans/7b_2node.dtp --from deepspeed "$TMP/wrap.json"
expect_contains "$TMP/err" "wrap.json:1:2: error: global_batch = 4611686018427387904 sequences of 4096 tokens: more tokens per step than fit in 64 bits"
printf '[parallelism]\ntensor_parallel_degree = 4294967296\npipeline_parallel_degree = 4294967296\n' >"$TMP/wrap.toml"
expect_status 2 "$DTPLAN" plans/7b_2node.dtp --from torchtitan "$TMP/wrap.toml"
expect_contains "$TMP/err" "wrap.toml:2:26: error: torchtitan shards over the ranks left, but the cluster's 16 GPUs are not a multiple of data_parallel_replicate_degree x tensor x pipeline x context degrees = more than 2^63"
printf -- '--tensor-model-parallel-size 4294967296\n--pipeline-model-parallel-size 4294967296\n--micro-batch-size 1\n--global-batch-size 16\n' \
  >"$TMP/wrap.args"
expect_status 1 "$DTPLAN" plans/7b_2node.dtp --from deepspeed "$TMP/wrap.args"
expect_contains "$TMP/err" "wrap.args:1:1: error: tp = 4294967296 exceeds the 16 GPUs of cluster 'two_nodes'"
printf -- '--pipeline-model-parallel-size 4294967296\n--num-layers-per-virtual-pipeline-stage 4294967296\n--num-layers 32\n--micro-batch-size 1\n--global-batch-size 16\n' \
  >"$TMP/wrap_vp.args"
expect_status 2 "$DTPLAN" plans/7b_2node.dtp --from megatron "$TMP/wrap_vp.args"
expect_contains "$TMP/err" "wrap_vp.args:1:32: error: Megatron-LM splits the layers evenly over the pipeline's ranks: 32 layers do not divide over 4294967296"

# A whole number past 9.2 x 10^18 is said to be too large, not to be no
# number; Megatron's first and last stages of 2^62 layers each sum without
# overflow.
printf -- '--num-layers 32\n--micro-batch-size 9223372036854775807\n--global-batch-size 16\n' >"$TMP/huge.args"
expect_status 2 "$DTPLAN" plans/7b_2node.dtp --from megatron "$TMP/huge.args"
expect_contains "$TMP/err" "huge.args:2:20: error: '9223372036854775807' for '--micro-batch-size' is past the whole numbers dtplan reads (below 9.2 x 10^18)"
printf -- '--num-layers 32\n--pipeline-model-parallel-size 4\n--decoder-first-pipeline-num-layers 4611686018427387904\n--decoder-last-pipeline-num-layers 4611686018427387904\n--micro-batch-size 1\n--global-batch-size 16\n' \
  >"$TMP/stages.args"
expect_status 2 "$DTPLAN" plans/7b_2node.dtp --from megatron "$TMP/stages.args"
expect_contains "$TMP/err" "stages.args:3:37: error: the first and last stages' 9223372036854775807 layers are more than the model's 32"

# An error a --set override causes points at the override, not at the
# file's key it conflicts with (issue 16).
expect_status 2 "$DTPLAN" plans/7b_2node.dtp --set model.hidden=4097
expect_contains "$TMP/err" "<--set>:1:7: error: 'hidden' (4097) must be a multiple of 'heads' (32)"

finish
