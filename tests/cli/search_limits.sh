# A long --optimize shows its progress with --progress also when stderr is
# not a terminal (and not without it); search threads that cannot be created
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

# Llama 3 405B on 3,072 x 8 GPUs, every key free: 2-5 s on two cores, more
# when other tests share them.
cat >"$TMP/long.dtp" <<'DTP'
model m : llama3_405b { }
cluster c {
  nodes = 3072
  gpus_per_node = 8
  gpu = H100_SXM
  inter_node = 8 x 400 Gbit/s
}
training { global_batch = 40320 }
DTP
HANG_GUARD=120 expect_status 0 "$DTPLAN" "$TMP/long.dtp" --optimize --threads 2 --quiet --progress
expect_contains "$TMP/err" "searching: "
expect_contains "$TMP/err" " candidates)"
HANG_GUARD=120 expect_status 0 "$DTPLAN" "$TMP/long.dtp" --optimize --threads 2 --quiet
checks=$((checks + 1))
! grep -q "searching" "$TMP/err" || fail "progress shown on a file without --progress"

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
