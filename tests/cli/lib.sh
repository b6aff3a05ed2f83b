# Shared by the tests/cli/*.sh scripts: small assertions that say what failed.
set -u
DTPLAN=${1:?usage: $0 path/to/dtplan}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
checks=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# expect_status WANT CMD...: runs CMD with a hang guard of $HANG_GUARD
# seconds (10 unless set), keeps its stdout in $TMP/out and stderr in
# $TMP/err.
expect_status() {
  local want=$1; shift
  checks=$((checks + 1))
  timeout "${HANG_GUARD:-10}" "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  [ "$rc" = "$want" ] || fail "'$*' exited $rc, expected $want; stderr: $(head -c 600 "$TMP/err")"
}

expect_contains() {  # FILE TEXT
  checks=$((checks + 1))
  grep -qF -- "$2" "$1" || fail "$(basename "$1") lacks '$2': $(head -c 600 "$1")"
}

expect_lacks() {  # FILE TEXT
  checks=$((checks + 1))
  ! grep -qF -- "$2" "$1" || fail "$(basename "$1") has '$2': $(grep -m1 -F -- "$2" "$1")"
}

finish() {
  echo "$((checks - failures)) passed, $failures failed"
  [ "$failures" = 0 ]
}
