# What --optimize says when it finds nothing, and that a diagnostic shared
# by several strategies or search results is printed once.
source "$(dirname "$0")/lib.sh"

# No free strategy: the whole space is searched, and its error points at
# the model block with the exact words and a pointer to --explain.
cat >"$TMP/nofit.dtp" <<'DTP'
model m : llama3_405b { }
cluster c {
  nodes = 1
  gpus_per_node = 1
  gpu = H100_SXM
}
training { global_batch = 8 }
DTP
expect_status 1 "$DTPLAN" "$TMP/nofit.dtp" --optimize
checks=$((checks + 1))
cat >"$TMP/want" <<EOF2
$TMP/nofit.dtp:1:1: error: no valid plan for model 'm' on cluster 'c' in the whole strategy space (64 candidates)
    1 | model m : llama3_405b { }
      | ^~~~~~~~~~~~~~~~~~~~~~~
note: --explain says which regions were rejected and why
EOF2
diff "$TMP/want" "$TMP/err" >/dev/null || fail "whole-space error differs: $(diff "$TMP/want" "$TMP/err")"
expect_contains "$TMP/out" "cluster   c: 1 x 1 H100_SXM = 1 GPU; "
expect_contains "$TMP/out" "search    64 candidates, 0 valid"

# With --explain the note gives way to the explanation on stdout.
expect_status 1 "$DTPLAN" "$TMP/nofit.dtp" --optimize --explain
checks=$((checks + 1))
grep -q "note: --explain" "$TMP/err" && fail "--explain still points at --explain"
expect_contains "$TMP/out" "tp = 1: 5.9 TiB per GPU > 75.6 GiB usable"

# A free strategy with one candidate: named, singular.
printf 'strategy s { tp = auto }\n' >>"$TMP/nofit.dtp"
expect_status 1 "$DTPLAN" "$TMP/nofit.dtp" --optimize
expect_contains "$TMP/err" "nofit.dtp:8:1: error: no valid plan in the space of strategy 's' (1 candidate)"

# One override that breaks both strategies of the file: one error, not two.
expect_status 1 "$DTPLAN" plans/405b_1024_h100.dtp --set strategy.cp=32000
checks=$((checks + 1))
n=$(grep -c "error: cp = 32000 exceeds the 1024 GPUs of cluster 'h100_pod'" "$TMP/err")
[ "$n" = 1 ] || fail "the cp error was printed $n times"

# The whole-space search of a file whose fixed strategies split 126 layers
# unevenly (dtplan's split, without the plan's Llama 3 one): each search
# result's warning points into the file, once.
sed "/^strategy search/,\$d; /account_for_/d" plans/405b_1024_h100.dtp >"$TMP/nofree.dtp"
# (A whole-space search of 1,024 GPUs: 0.7 s in a release build, several
# under ASan; the guard against a hang is widened for it alone.)
HANG_GUARD=40 expect_status 0 "$DTPLAN" "$TMP/nofree.dtp" --optimize
checks=$((checks + 1))
grep -q "^warning:" "$TMP/err" && fail "a warning without file:line:col: $(grep '^warning:' "$TMP/err")"
checks=$((checks + 1))
dups=$(grep ': warning: ' "$TMP/err" | sort | uniq -d)
[ -z "$dups" ] && [ -n "$(grep ': warning: ' "$TMP/err")" ] || fail "warnings repeated or missing: $(cat "$TMP/err")"

# An empty space says why: no product of the degrees fills the cluster, or
# the framework runs none of a key's written values (a mixture's experts
# under Megatron-LM 2021, which had no expert parallelism).
cat >"$TMP/empty.dtp" <<'DTP'
model m { layers = 32; hidden = 4096; heads = 32; kv_heads = 8; ffn = 14336; vocab = 32000; seq_len = 4096; mlp = swiglu; experts = 8; experts_per_token = 2 }
cluster c { nodes = 4; gpus_per_node = 8; gpu = H100_SXM; inter_node = 8 x 400 Gbit/s }
training { framework = megatron; global_batch = 512 }
strategy free { dp = 16; pp = {4, 8}; ep = {4, 8}; zero = 1; checkpoint = full; micro_batch = 1 }
DTP
expect_status 1 "$DTPLAN" "$TMP/empty.dtp" --optimize --explain
expect_contains "$TMP/out" "  no combination of tp x pp x cp x dp in the space multiplies to 32 GPUs"
expect_status 1 "$DTPLAN" "$TMP/empty.dtp" --optimize --explain --set free.pp=2 --set training.framework=megatron_2021
expect_contains "$TMP/out" "  framework 'megatron_2021' runs none of the space's values of ep"
expect_contains "$TMP/out" "  framework 'megatron_2021' does not run expert parallelism: left out of the space"
expect_contains "$TMP/out" "  framework 'megatron_2021' does not run every ZeRO stage (only 0): left out of the space"
expect_lacks "$TMP/out" "multiplies"
expect_status 1 "$DTPLAN" "$TMP/empty.dtp" --set free.pp=2 --set free.ep=8 --set training.framework=megatron_2021 \
  --set free.zero=0
expect_contains "$TMP/err" "<--set>:1:6: error: framework 'megatron_2021' does not run expert parallelism (ep = 8)"

# Regions the framework's sequence split rules out, each with its reason
# and its count ("1 candidate", not "1 candidates").
cat >"$TMP/seq.dtp" <<'DTP'
model m : llama2_7b { seq_len = 4100 }
cluster c { nodes = 2; gpus_per_node = 8; gpu = H100_SXM; inter_node = 8 x 400 Gbit/s }
training { framework = megatron; global_batch = 256 }
strategy s { cp = {1, 2, 4, 8}; tp = auto; zero = 1 }
DTP
expect_status 0 "$DTPLAN" "$TMP/seq.dtp" --optimize --explain
expect_contains "$TMP/out" "  tp = 1, pp = 1, cp = 4, dp = 4 and 2 more: framework 'megatron' balances causal attention over 2 x cp = 8 chunks of the sequence, which seq_len = 4100 does not divide into (3 candidates)"
expect_contains "$TMP/out" "  tp = 8, pp = 1, cp = 1, dp = 2: sequence parallelism splits seq_len = 4100 over tp = 8 ranks, which do not divide it (1 candidate)"
expect_lacks "$TMP/out" "1 candidates"

# A mixture's structures differ in ep: --explain names it, so the memory
# each needs reads against the right split of the experts.
expect_status 0 "$DTPLAN" plans/mixtral_8x7b_4node_h100.dtp --optimize --explain --top 1
expect_contains "$TMP/out" "  tp = 1, pp = 1, cp = 1, dp = 32: 279.2 GiB per GPU > 75.6 GiB usable"
expect_contains "$TMP/out" "  tp = 1, pp = 1, cp = 1, dp = 32, ep = 2: 153.2 GiB per GPU > 75.6 GiB usable"
expect_contains "$TMP/out" "  tp = 1, pp = 8, cp = 1, dp = 4, ep = 8 and 2 more: ep = 8 does not divide dp x cp = 4 (36 candidates)"

# Many reasons: the twelve that rule out the most candidates, then one line
# for the rest; with thirteen, all thirteen (no "1 more reasons").
sed -e 's/  tp          = {1, 2, 4, 8}/  tp = auto\n  cp = auto/' -e 's/  pp          = 1..4/  pp = auto/' \
  plans/7b_2node.dtp >"$TMP/wide.dtp"
expect_status 0 "$DTPLAN" "$TMP/wide.dtp" --optimize --strategy search --explain --top 1 --set cluster.nodes=9
checks=$((checks + 1))
[ "$(grep -c ' more: \| dp = [0-9]*: ' "$TMP/out")" = 12 ] || fail "9 nodes: not twelve reasons shown"
expect_contains "$TMP/out" "  tp = 3, pp = 1, cp = 3, dp = 8 and 19 more: tp = 3 does not divide heads = 32 (828 candidates)"
expect_contains "$TMP/out" "  6 more reasons rule out 9 more structures (378 candidates)"
expect_status 0 "$DTPLAN" "$TMP/wide.dtp" --optimize --strategy search --explain --top 1 --set cluster.nodes=22
checks=$((checks + 1))
[ "$(grep -c ' more: \| dp = [0-9]*: ' "$TMP/out")" = 13 ] || fail "22 nodes: not thirteen reasons shown"
expect_contains "$TMP/out" "  tp = 176, pp = 1, cp = 1, dp = 1: tp = 176 does not divide heads = 32 (42 candidates)"
expect_lacks "$TMP/out" "more reasons"

finish
