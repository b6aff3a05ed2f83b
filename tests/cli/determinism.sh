# The same input gives byte-identical output, whatever the thread count
# (the search's own wall time, the only figure that may differ, is masked).
source "$(dirname "$0")/lib.sh"

mask() { sed -E 's/("seconds": )[0-9.e+-]+/\1T/; s/(valid, )[0-9.]+ (s|ms|us)$/\1T/' "$1"; }
for plan in plans/*.dtp; do
  for format in text json; do
    expect_status 0 "$DTPLAN" "$plan" --optimize --format "$format" --threads 1
    mask "$TMP/out" >"$TMP/one"
    expect_status 0 "$DTPLAN" "$plan" --optimize --format "$format" --threads 2
    mask "$TMP/out" >"$TMP/two"
    expect_status 0 "$DTPLAN" "$plan" --optimize --format "$format" --threads 3
    mask "$TMP/out" >"$TMP/three"
    checks=$((checks + 1))
    cmp -s "$TMP/one" "$TMP/two" && cmp -s "$TMP/one" "$TMP/three" ||
      fail "$plan ($format): output depends on the thread count: $(diff "$TMP/one" "$TMP/two" | head -5)"
  done
done

finish
