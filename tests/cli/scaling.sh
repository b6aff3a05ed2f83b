# --explain's scaling lines where more GPUs raise the per-GPU rate: the
# smallest counts fit only by recomputing (and sharding) more, which the
# sentence names, and the step's parts under the ideal sum to the gap.
source "$(dirname "$0")/lib.sh"

expect_status 0 "$DTPLAN" plans/70b_16node_h100_ib.dtp --optimize --explain --top 1
expect_contains "$TMP/out" "  16 GPUs: step 299 s, 878 tokens/s per GPU, 100 % of the 16-GPU rate;"
expect_contains "$TMP/out" "(fits only with zero = 3, checkpoint = full)"
expect_contains "$TMP/out" "  at 128 GPUs the per-GPU rate is 29.8 % above the 16-GPU one, whose step fits only with zero = 3, checkpoint = full: the step is 28.7 s against an ideal 37.3 s;"
expect_contains "$TMP/out" "; the 8.58 s under the ideal: recomputation -7.77 s, exposed communication -1.42 s, compute slowed by hidden communication +421 ms, the bubble +174 ms"
expect_lacks "$TMP/out" "0 % of the per-GPU rate is lost"

expect_status 0 "$DTPLAN" plans/70b_16node_h100_ib.dtp --optimize --explain --top 1 --format json
checks=$((checks + 1))
python3 - "$TMP/out" <<'PY' || fail "the scaling_loss figures of the JSON"
import json, sys
doc = json.load(open(sys.argv[1]))
loss = [e for e in doc["explain"] if e["kind"] == "scaling_loss"][0]["figures"]
assert loss["lost"] == 0 and abs(loss["gained"] - 0.298) < 0.001, loss
parts = sum(v for k, v in loss.items() if k.endswith("_beyond_s"))
assert abs(parts - loss["beyond_ideal_s"]) < 1e-5 * abs(loss["beyond_ideal_s"]), (parts, loss)  # six figures each
assert loss["beyond_ideal_s"] < 0
PY

finish
