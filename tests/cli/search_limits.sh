# --optimize's work is bounded: a space over --max-candidates is refused at
# once with its size, --time-limit stops a search and says so, the largest
# cluster answers within 10 s; a long search shows its progress with
# --progress also when stderr is not a terminal; search threads that cannot be created
# fall back to one thread, or end with exit status 2 and a message, never an
# uncaught std::system_error. Both need an uninstrumented build: the
# sanitizers make the search too slow to time and cannot run under a
# virtual memory limit.
source "$(dirname "$0")/lib.sh"

if ldd "$DTPLAN" 2>/dev/null | grep -q 'libasan'; then
  echo "note: $DTPLAN is built with AddressSanitizer; skipped"
  finish
  exit
fi

# Llama 3 405B on 5,040 x 8 GPUs (40,320 = 2^7 3^2 5 7: every degree has
# many divisors), every key free: 664 M candidates, about 14 s on one core.
cat >"$TMP/huge.dtp" <<'DTP'
model m : llama3_405b { }
cluster c {
  nodes = 5040
  gpus_per_node = 8
  gpu = H100_SXM
  inter_node = 8 x 400 Gbit/s
}
training { global_batch = 40320 }
DTP
# Refused before any candidate is looked at, with its size and the way out.
expect_status 1 "$DTPLAN" "$TMP/huge.dtp" --optimize
expect_contains "$TMP/err" "huge.dtp:1:1: error: the space holds 664,133,596 candidates, more than the 64,000,000 --optimize searches (--max-candidates); fix some of its keys (tp, pp, cp, micro_batch, order) or raise the limit"
# Searched under a time limit: it stops, says so and ranks what it saw.
HANG_GUARD=60 expect_status 0 "$DTPLAN" "$TMP/huge.dtp" --optimize --threads 1 --max-candidates 700000000 --time-limit 2 --progress
expect_contains "$TMP/err" "warning: the search stopped at its time limit (2.00 s) having looked at "
expect_contains "$TMP/err" "of 664,133,596 candidates: the plans shown are the best of those"
# --progress on a log: whole lines ("searching: N% ..., S s"), no carriage returns.
expect_contains "$TMP/err" "searching: "
checks=$((checks + 1))
! grep -q $'\r' "$TMP/err" || fail "progress to a log rewrote its line with carriage returns"
expect_status 1 "$DTPLAN" "$TMP/huge.dtp" --optimize --max-candidates 100 --quiet
checks=$((checks + 1))
! grep -q "searching" "$TMP/err" || fail "progress shown for a refused search"

# Llama 3 405B on 2^24 GPUs (the largest cluster dtplan plans), every key
# free: 20.6 M candidates, searched to the end. The guard catches a hang,
# not slowness (a few seconds on an idle machine; bench/search_bench times
# searches): with 10 s it failed on a loaded machine.
cat >"$TMP/largest.dtp" <<'DTP'
model m : llama3_405b { }
cluster c { nodes = 2097152; gpus_per_node = 8; gpu = H100_SXM; inter_node = 3200 Gbit/s }
training { global_batch = 16777216 }
DTP
HANG_GUARD=60 expect_status 0 "$DTPLAN" "$TMP/largest.dtp" --optimize --quiet
expect_contains "$TMP/out" "search#1: valid"

# limits STACK_KIB VM_KIB CMD...: every thread's stack is STACK_KIB, and the
# process may map at most VM_KIB.
cat >"$TMP/limits" <<'SH'
#!/bin/bash
ulimit -s "$1"
ulimit -v "$2"
shift 2
exec "$@"
SH
chmod +x "$TMP/limits"

"$DTPLAN" plans/7b_2node.dtp --optimize --threads 1 >"$TMP/reference"
# Room for one 1 GB stack, not two: eight threads cannot start, one can.
HANG_GUARD=60 expect_status 0 "$TMP/limits" 1000000 1500000 "$DTPLAN" plans/7b_2node.dtp --optimize --threads 8
expect_contains "$TMP/err" \
  "warning: cannot start the search's threads (Resource temporarily unavailable); searching with one thread"
checks=$((checks + 1))
sed -E 's/(valid, )[0-9.]+ (s|ms|us)$/\1T/' "$TMP/out" >"$TMP/fallback"
sed -E 's/(valid, )[0-9.]+ (s|ms|us)$/\1T/' "$TMP/reference" | cmp -s - "$TMP/fallback" ||
  fail "the one-thread fallback's report differs: $(sed -E 's/(valid, )[0-9.]+ (s|ms|us)$/\1T/' "$TMP/reference" | diff - "$TMP/fallback" | head -5)"
# No room for any: exit 2 with the reason.
expect_status 2 "$TMP/limits" 1000000 600000 "$DTPLAN" plans/7b_2node.dtp --optimize --threads 8
expect_contains "$TMP/err" "error: cannot start a thread for the search: Resource temporarily unavailable"
checks=$((checks + 1))
! grep -q "system_error\|terminate" "$TMP/err" || fail "an uncaught exception: $(cat "$TMP/err")"

finish
