# Regressions for what the libFuzzer targets found (tests/fuzz,
# docs/research/fuzzing.md): each input is the smallest that showed it.
source "$(dirname "$0")/lib.sh"

# The session's diagnostics stop at 20 errors with a count of the rest, as
# lowering's do: 1,000 strategies that cannot be placed printed 1,000 errors.
{
  printf 'model m : llama2_7b { }\ncluster c { nodes = 2; gpus_per_node = 8; gpu = H100_SXM; inter_node = 100 Gbit/s }\n'
  printf 'training { global_batch = 256 }\n'
  for i in $(seq 1 1000); do echo "strategy s$i { tp = 3 }"; done
} >"$TMP/many.dtp"
expect_status 1 "$DTPLAN" "$TMP/many.dtp"
checks=$((checks + 1))
errors=$(grep -c ': error: ' "$TMP/err")
[ "$errors" = 20 ] || fail "1,000 invalid strategies: $errors errors shown, expected 20"
expect_contains "$TMP/err" "many.dtp:23:16: error: tp x pp x cp = 3 x 1 x 1 = 3 does not divide the 16 GPUs of cluster 'c', so dp cannot be derived"
expect_contains "$TMP/err" "note: 980 more errors not shown"
# Free strategies without --optimize: 20 notes, then the count.
{
  printf 'model m : llama2_7b { }\ncluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n'
  printf 'training { global_batch = 256 }\nstrategy fixed { tp = 8 }\n'
  for i in $(seq 1 50); do echo "strategy f$i { tp = auto }"; done
} >"$TMP/free.dtp"
expect_status 0 "$DTPLAN" "$TMP/free.dtp"
checks=$((checks + 1))
notes=$(grep -c ': note: strategy' "$TMP/err")
[ "$notes" = 20 ] || fail "50 free strategies: $notes notes shown, expected 20"
expect_contains "$TMP/err" "note: 30 more notes not shown"

# An override that breaks every strategy is one error, and the count of the
# rest ends the list: each strategy's copy of the --set error counted
# toward the 20 (and a copy printed after the count, with it).
{
  printf 'model m : llama2_70b { }\ncluster c { gpu = B200; gpus_per_node = 1; nodes = 2; inter_node = 8 x 400 Gbit/s }\n'
  printf 'training { global_batch = 8 }\n'
  for i in $(seq 1 30); do echo "strategy s$i { tp = 4 }"; done
} >"$TMP/set.dtp"
expect_status 1 "$DTPLAN" "$TMP/set.dtp" --set strategy.dp=65536 --optimize
checks=$((checks + 1))
errors=$(grep -c ': error: ' "$TMP/err")
sets=$(grep -c "^<--set>:1:10: error: dp = 65536 exceeds the 2 GPUs of cluster 'c'$" "$TMP/err")
[ "$errors" = 20 ] && [ "$sets" = 1 ] || fail "--set breaking 30 strategies: $errors errors, $sets of them the --set's"
checks=$((checks + 1))
[ "$(tail -1 "$TMP/err")" = "note: 12 more errors not shown" ] || fail "the count is not last: $(tail -3 "$TMP/err")"

# A plan of 10^9 micro-batches per step: the skeleton's pipeline figures
# are counted, not simulated op by op (256 GB and minutes before).
cat >"$TMP/micro.dtp" <<'DTP'
model m : llama2_7b { }
cluster c { nodes = 1; gpus_per_node = 2; gpu = H100_SXM }
training { global_batch = 1000000000 }
strategy s { pp = 2 }
DTP
expect_status 0 "$DTPLAN" "$TMP/micro.dtp" --emit "$TMP/micro" --quiet
expect_contains "$TMP/micro/skeleton/train_step.cu" \
  "constexpr long long k_pipe_slots = 2000000000, k_pipe_makespan = 3000000003, k_pipe_idle = 3, k_pipe_bubble_pairs = 1;"

# --explain's figures in JSON: a size is whole bytes, as every other size
# of the document (fuzz_pipeline: 405B on one H100, usable_bytes was the
# GPU's usable memory as a real, 8.12258e+10, neither whole nor exact).
cat >"$TMP/explain.dtp" <<'DTP'
model m : llama3_405b { }
cluster c { nodes = 1; gpus_per_node = 1; gpu = H100_SXM }
training { global_batch = 8 }
DTP
"$DTPLAN" "$TMP/explain.dtp" --optimize --explain --format json >"$TMP/explain.json" 2>/dev/null || true
checks=$((checks + 1))
python3 - "$TMP/explain.json" <<'PY' || fail "an --explain size in JSON is not whole bytes"
import json, sys
doc = json.load(open(sys.argv[1]), parse_float=lambda text: ("real", text))
sizes = [v for e in doc["explain"] for k, v in e["figures"].items() if k.endswith("bytes") or k.endswith("bytes_per_gpu")]
assert sizes and all(isinstance(v, int) for v in sizes), sizes
PY

# Advice names a checkpointing mode that recomputes more only where it
# frees memory: on 405B's interleaved search result op-level checkpointing
# keeps 1.1 GiB more than selective, and the advice said "ops frees -1.1 GiB
# of memory" (fuzz_pipeline, from the plans/ seed, after the search began
# proposing the 126 + 2 layer interleaving).
expect_status 0 "$DTPLAN" plans/405b_1024_h100.dtp --optimize
checks=$((checks + 1))
! grep -q "frees -" "$TMP/out" || fail "advice frees a negative size: $(grep -m1 'frees -' "$TMP/out")"
expect_contains "$TMP/out" "full frees 39.3 GiB of memory for 25.2 s more per step"

# A tiny figure reads in scientific notation, not as a run of zeros: a
# per-step overhead of 1e-300 s printed "0.000..." with 290 digits
# (fuzz_extreme, 2026-12-05).
cat >"$TMP/tiny.dtp" <<'DTP'
model m : llama2_7b { }
gpu g : H100_SXM { step_overhead = 1e-300 s }
cluster c { gpu = g; gpus_per_node = 1; nodes = 4; inter_node = 8 x 400 Gbit/s }
training { global_batch = 8 }
strategy fixed { tp = 2 }
DTP
expect_status 0 "$DTPLAN" "$TMP/tiny.dtp"
expect_contains "$TMP/out" "per-step overhead            1.00e-291 ns"
checks=$((checks + 1))
! grep -q "0000000000" "$TMP/out" || fail "a run of zeros: $(grep -m1 '0000000000' "$TMP/out")"

# A gradient bucket of 1e-300 TiB: 10^298 buckets overflowed their count's
# conversion to an integer (fuzz_extreme, 2026-12-05); a bucket is at least
# a byte, and a byte's bucket costs a finite step.
expect_status 2 "$DTPLAN" plans/7b_2node.dtp --set "framework.ddp_bucket_size=1e-300 TiB" --strategy current
expect_contains "$TMP/err" "<--set>:1:27: error: 'ddp_bucket_size' must be at least 1 B, got 1e-300 TiB"
expect_status 0 "$DTPLAN" plans/7b_2node.dtp --set "training.ddp_bucket_size=1 B" --set training.grad_bucket=fixed \
  --strategy current
expect_contains "$TMP/out" "time per step"

finish
