# The JSON as an interface: every plan's document (checked, searched with
# --explain, emitted as plan.json, a framework job imported with --from)
# validates against docs/spec/dtplan.schema.json, and names its schema and
# dtplan's versions; a document with a key the schema does not describe, or
# a figure of the wrong type, does not.
source "$(dirname "$0")/lib.sh"

schema="$PWD/docs/spec/dtplan.schema.json"
validate="$PWD/tests/schema/validate.py"
docs=()
n=0
# json_doc STEM STATUS ARGS...: dtplan ARGS --format json, expecting STATUS,
# kept as $TMP/STEM.json among the documents validated below.
# The first plan's stage_moe_layers, as a list.
expect_stage_moe_layers() {  # FILE LIST
  checks=$((checks + 1))
  local got
  got=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["plans"][0]["shape"]["stage_moe_layers"])' "$1")
  [ "$got" = "$2" ] || fail "$(basename "$1"): stage_moe_layers $got, expected $2"
}
# An assertion in Python on the document `d` of FILE.
expect_python() {  # FILE ASSERTION
  checks=$((checks + 1))
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); exec(sys.argv[2])' "$1" "$2" 2>"$TMP/python_err" ||
    fail "$(basename "$1"): $(tail -1 "$TMP/python_err")"
}
json_doc() {
  local stem=$1 status=$2
  shift 2
  expect_status "$status" "$DTPLAN" "$@" --format json
  cp "$TMP/out" "$TMP/$stem.json" && docs+=("$TMP/$stem.json")
  n=$((n + 1))
}
for plan in plans/*.dtp; do
  stem=$(basename "$plan" .dtp)
  HANG_GUARD=120 expect_status 0 "$DTPLAN" "$plan" --format json
  cp "$TMP/out" "$TMP/$stem.json" && docs+=("$TMP/$stem.json")
  HANG_GUARD=120 expect_status 0 "$DTPLAN" "$plan" --optimize --explain --top 3 --format json
  cp "$TMP/out" "$TMP/$stem.explain.json" && docs+=("$TMP/$stem.explain.json")
  expect_contains "$TMP/$stem.explain.json" '"kind": "scaling_point"'
  n=$((n + 2))
done
expect_status 0 "$DTPLAN" plans/7b_2node.dtp --strategy current --emit "$TMP/bundle" --quiet
docs+=("$TMP/bundle/plan.json")
# Shard keys that form another key's groups, counted once (an explain kind
# the plans' searches do not produce).
json_doc same_plan 0 plans/7b_2node.dtp --optimize --explain --set search.shard=auto
expect_contains "$TMP/same_plan.json" '"kind": "same_plan"'
# fp4 (an enum value the plans do not use).
json_doc fp4 0 plans/405b_gb200_nvl72.dtp --set model.precision=fp4 --strategy mlperf_v50
expect_contains "$TMP/fp4.json" '"precision": "fp4"'
# A mixture of experts (plans/mixtral_8x7b_4node_h100.dtp, searched above):
# ep, the experts and their shard group in the document.
mixture="$TMP/mixtral_8x7b_4node_h100.explain.json"
expect_contains "$mixture" '"ep": 8'
expect_contains "$mixture" '"experts": 8'
checks=$((checks + 1))
python3 - "$mixture" <<'PY2' || fail "the mixture's shape in the JSON"
import json, sys
doc = json.load(open(sys.argv[1]))
whole = 0
for plan in doc["plans"]:
    shape, s = plan["shape"], plan["strategy"]
    # etp 1 widens the experts' groups over the tp ranks.
    assert s["etp"] in (1, s["tp"]), s
    widen = s["tp"] // s["etp"]
    whole += s["etp"] < s["tp"]
    assert shape["expert_shard_ranks"] == max(1, shape["shard_ranks"] * widen // s["ep"]), (shape, s)
    assert 0 < shape["layer_expert_params_per_gpu"] < shape["layer_params_per_gpu"], shape
    # No published run of a mixture is behind the expected error: it says so.
    if plan["time"] is not None:
        assert plan["time"]["unmeasured"] == ["mixture of experts"], plan["time"]["unmeasured"]
    # The experts' gradients sum over tp / etp x dp x cp / ep ranks.
    sync = shape["groups"]["sync"]["ranks"]
    assert shape["groups"]["expert_sync"]["ranks"] == sync * widen // s["ep"], (shape["groups"], s)
# The search's third plan holds each expert whole (etp 1 at tp 2).
assert whole >= 1, whole
PY2
python3 - "$TMP/7b_2node.json" <<'PY3' || fail "a dense plan's time names nothing unmeasured"
import json, sys
for plan in json.load(open(sys.argv[1]))["plans"]:
    assert plan["time"] is None or plan["time"]["unmeasured"] == [], plan["time"]
PY3
checks=$((checks + 1))
expect_status 0 "$DTPLAN" plans/mixtral_8x7b_4node_h100.dtp --strategy example
expect_contains "$TMP/out" "    not measured                 mixture of experts: no published run behind that figure has one, so its terms are unchecked"
expect_status 0 "$DTPLAN" tests/data/published/torchtitan_llama3_8b.dtp \
  --from torchtitan tests/data/published/torchtitan_llama3_8b.toml --format json
cp "$TMP/out" "$TMP/imported.json" && docs+=("$TMP/imported.json")
expect_contains "$TMP/imported.json" '"schema_version": 17,'
expect_contains "$TMP/imported.json" "\"dtplan_version\": \"$("$DTPLAN" --version | cut -d' ' -f2)\","
n=$((n + 2))
# Sizes past 2^63 bytes (a billion layers) are written whole, every digit,
# not wrapped to a negative int64.
cat >"$TMP/billion_layers.dtp" <<'DTP'
model m : llama3_405b { layers = 1000000007 }
cluster c { nodes = 2; gpus_per_node = 8; gpu = H100_SXM; inter_node = 8 x 400 Gbit/s }
training { global_batch = 2048 }
strategy s { dp = 16; zero = 0 }
DTP
json_doc billion_layers 1 "$TMP/billion_layers.dtp"
expect_contains "$TMP/billion_layers.json" '"total_bytes": 55268868556697960448,'
expect_contains "$TMP/billion_layers.json" '"optimizer_bytes": 38252446014199627776,'
expect_lacks "$TMP/billion_layers.json" '-9223372036854775808'
# A mixture with an expert capacity, padded, under hybrid sharding: the
# model's capacity and the experts' own shard group (schema version 7).
cat >"$TMP/capacity.dtp" <<'DTP'
model m : llama2_7b { experts = 8; experts_per_token = 2; capacity_factor = 1.25; pad_to_capacity = true }
cluster c { nodes = 4; gpus_per_node = 8; gpu = H100_SXM; inter_node = 8 x 400 Gbit/s }
training { framework = megatron; global_batch = 256 }
strategy s { pp = 2; ep = 8; zero = 1; shard = 8; checkpoint = full }
DTP
json_doc capacity 0 "$TMP/capacity.dtp"
expect_status 0 "$DTPLAN" "$TMP/capacity.dtp" --emit "$TMP/capacity_bundle" --quiet
expect_contains "$TMP/capacity.json" '"capacity_factor": 1.25,'
expect_contains "$TMP/capacity.json" '"pad_to_capacity": true,'
expect_contains "$TMP/capacity.json" '"group": "replicate",'
# The same model dropless under a routing skew (schema version 8), and its
# text report's model line beside the capacity's.
sed -e 's/capacity_factor = 1.25; pad_to_capacity = true/routing_imbalance = 1.5/' "$TMP/capacity.dtp" >"$TMP/skew.dtp"
json_doc skew 0 "$TMP/skew.dtp"
expect_contains "$TMP/skew.json" '"routing_imbalance": 1.5,'
expect_contains "$TMP/capacity.json" '"routing_imbalance": 1,'
expect_contains "$TMP/imported.json" '"routing_imbalance": 1,'
expect_status 0 "$DTPLAN" "$TMP/skew.dtp"
expect_contains "$TMP/out" "ffn 11008 swiglu x 8 experts (2 a token, routing imbalance 1.5), vocab 32000"
expect_status 0 "$DTPLAN" "$TMP/capacity.dtp"
expect_contains "$TMP/out" "ffn 11008 swiglu x 8 experts (2 a token, capacity 1.25 padded), vocab 32000"
# Llama 4's every other layer dense: the model's two keys, each stage's
# mixtures and a dense layer's weights (schema version 8); its text line;
# its bundle's skeleton with the dense layers' tables beside the mixtures'.
sed -e 's/capacity_factor = 1.25; pad_to_capacity = true/dense_layers = 1; moe_layer_freq = 2/' "$TMP/capacity.dtp" >"$TMP/interleaved.dtp"
json_doc interleaved 0 "$TMP/interleaved.dtp"
expect_contains "$TMP/interleaved.json" '"dense_layers": 1,'
expect_contains "$TMP/interleaved.json" '"moe_layer_freq": 2,'
expect_stage_moe_layers "$TMP/interleaved.json" "[8, 8]"
expect_contains "$TMP/interleaved.json" '"dense_layer_params_per_gpu": 202383360,'
expect_contains "$TMP/capacity.json" '"dense_layers": 0,'
expect_stage_moe_layers "$TMP/capacity.json" "[16, 16]"
expect_status 0 "$DTPLAN" "$TMP/interleaved.dtp"
expect_contains "$TMP/out" "ffn 11008 swiglu x 8 experts (2 a token) in 16 of 32 layers, the others dense ffn 11008, vocab 32000"
expect_status 0 "$DTPLAN" "$TMP/interleaved.dtp" --emit "$TMP/interleaved_bundle" --quiet
expect_contains "$TMP/interleaved_bundle/skeleton/train_step.cu" "constexpr long long k_dense_layers = 1, k_moe_layer_freq = 2;"
expect_contains "$TMP/interleaved_bundle/skeleton/train_step.cu" "constexpr int k_dense_gemm_count = 4;"
expect_contains "$TMP/capacity_bundle/skeleton/train_step.cu" "constexpr gemm_spec const* k_dense_gemms = k_gemms;"

# Qwen3's heads, 128 wide at hidden 2048, and its q/k norms (schema
# versions 9 and 10): the model's head_dim and qk_norm, its text line;
# hidden / heads where unwritten.
sed -e 's/capacity_factor = 1.25; pad_to_capacity = true/hidden = 2048; heads = 32; kv_heads = 4; head_dim = 128; qk_norm = true/' "$TMP/capacity.dtp" >"$TMP/head_dim.dtp"
json_doc head_dim 0 "$TMP/head_dim.dtp"
expect_contains "$TMP/head_dim.json" '"head_dim": 128,'
expect_contains "$TMP/head_dim.json" '"qk_norm": true,'
expect_contains "$TMP/capacity.json" '"head_dim": 128,'
expect_contains "$TMP/capacity.json" '"qk_norm": false,'
expect_contains "$TMP/imported.json" '"head_dim": 128,'
expect_status 0 "$DTPLAN" "$TMP/head_dim.dtp"
expect_contains "$TMP/out" "32 layers, hidden 2048, 32 heads (4 kv) of 128 with q/k norms, ffn 11008 swiglu"
# DeepSeek-V3's multi-latent attention (schema version 11): its ranks and
# widths; 0 (and head_dim's values) without it.
sed -e 's/capacity_factor = 1.25; pad_to_capacity = true/head_dim = 128; q_lora_rank = 1536; kv_lora_rank = 512; qk_rope_head_dim = 64; v_head_dim = 96/' -e 's/pp = 2; ep = 8/pp = 4; ep = 8/' "$TMP/capacity.dtp" >"$TMP/mla.dtp"
json_doc mla 0 "$TMP/mla.dtp"
expect_contains "$TMP/mla.json" '"q_lora_rank": 1536,'
expect_contains "$TMP/mla.json" '"kv_lora_rank": 512,'
expect_contains "$TMP/mla.json" '"qk_rope_head_dim": 64,'
expect_contains "$TMP/mla.json" '"v_head_dim": 96,'
# Its skeleton runs the core as heads of the mean width, the same work.
expect_status 0 "$DTPLAN" "$TMP/mla.dtp" --emit "$TMP/mla_bundle" --quiet
expect_contains "$TMP/mla_bundle/skeleton/train_step.cu" "// Query/key heads 192 wide, value heads 96: run as heads of their mean, 144."
expect_contains "$TMP/mla_bundle/skeleton/train_step.cu" "constexpr attention_spec k_attention = {32, 4096, 2112, 144, 1,"
expect_lacks "$TMP/capacity_bundle/skeleton/train_step.cu" "Query/key heads"
expect_contains "$TMP/capacity.json" '"kv_lora_rank": 0,'
# What selective recomputation recomputes (schema version 12): only where
# not the core attention alone.
sed -e 's/training { framework = megatron; global_batch = 256 }/training { framework = megatron; global_batch = 256; recompute_modules = {core_attn, moe_act, moe} }/' -e 's/checkpoint = full/checkpoint = selective/' "$TMP/capacity.dtp" >"$TMP/modules.dtp"
json_doc modules 0 "$TMP/modules.dtp"
expect_python "$TMP/modules.json" 'assert d["training"]["recompute_modules"] == ["core_attn", "moe_act", "moe"], d["training"]'
expect_python "$TMP/capacity.json" 'assert "recompute_modules" not in d["training"], d["training"]'
expect_contains "$TMP/capacity.json" '"v_head_dim": 128,'
# Multi-token prediction (schema version 13): its modules, 0 without; the
# text line; the skeleton runs each on the last stage.
sed -e 's/capacity_factor = 1.25; pad_to_capacity = true/mtp_layers = 1/' "$TMP/capacity.dtp" >"$TMP/mtp.dtp"
json_doc mtp 0 "$TMP/mtp.dtp"
expect_contains "$TMP/mtp.json" '"mtp_layers": 1,'
expect_contains "$TMP/capacity.json" '"mtp_layers": 0,'
expect_status 0 "$DTPLAN" "$TMP/mtp.dtp"
expect_contains "$TMP/out" "32 layers + 1 multi-token prediction module, hidden 4096,"
expect_status 0 "$DTPLAN" "$TMP/mtp.dtp" --emit "$TMP/mtp_bundle" --quiet
expect_contains "$TMP/mtp_bundle/skeleton/train_step.cu" "constexpr long long k_mtp_layers = 1;"
expect_contains "$TMP/mtp_bundle/skeleton/train_step.cu" "constexpr bool k_mtp_dense = false;"
expect_contains "$TMP/mtp_bundle/skeleton/train_step.cu" "constexpr gemm_spec k_mtp_projection = {\"mtp-projection\", 4096, 4096, 8192, 1, 1, 0,"
expect_contains "$TMP/capacity_bundle/skeleton/train_step.cu" "constexpr long long k_mtp_layers = 0;"

checks=$((checks + 1))
python3 "$validate" "$schema" "${docs[@]}" >"$TMP/validated" 2>&1 || fail "$(cat "$TMP/validated")"
expect_contains "$TMP/validated" "$n of $n documents valid"

# The schema is strict: an undescribed key, a string for a number, a
# missing version each make a document invalid.
python3 - "$TMP/imported.json" "$TMP" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
bad = dict(doc, surprise=1)
json.dump(bad, open(sys.argv[2] + "/bad_key.json", "w"))
bad = json.loads(json.dumps(doc)); bad["plans"][0]["time"]["step_s"] = "2 s"
json.dump(bad, open(sys.argv[2] + "/bad_type.json", "w"))
bad = dict(doc); del bad["schema_version"]
json.dump(bad, open(sys.argv[2] + "/bad_version.json", "w"))
PY
checks=$((checks + 1))
python3 "$validate" "$schema" --expect-invalid "$TMP/bad_key.json" "$TMP/bad_type.json" "$TMP/bad_version.json" \
  >"$TMP/invalid" 2>&1 || fail "$(cat "$TMP/invalid")"
expect_contains "$TMP/invalid" "3 of 3 documents invalid"
finish
