#!/usr/bin/env bash
# The README's two commands as a new user runs them, in a fresh clone:
# scripts/quickstart, then scripts/test-all. Fails unless test-all's release
# pass ran its nvcc compile tests (built with nvcc where it is installed)
# and both passes ran at least their floor of tests; then runs the
# quickstart again and checks that it changed neither pass's tests.
#
# The clone holds HEAD plus the uncommitted changes to tracked files (new
# files count once `git add`ed). .ci/run runs this; it costs a quickstart
# build on top of the whole suite.
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
work=$(mktemp -d "${TMPDIR:-/tmp}/dtplan-fresh-clone.XXXXXX")
[ -n "${DTPLAN_KEEP_CLONE:-}" ] || trap 'rm -rf "$work"' EXIT

rev=$(git -C "$src" stash create)
rev=${rev:-$(git -C "$src" rev-parse HEAD)}
git clone --quiet --shared --no-checkout "$src" "$work/dtplan"
git -C "$work/dtplan" checkout --quiet --detach "$rev"
cd "$work/dtplan"
echo "fresh clone of $(git rev-parse --short HEAD) in $work/dtplan"

fail() {
  echo "fresh_clone: $*" >&2
  exit 1
}

scripts/quickstart
scripts/test-all 2>&1 | tee "$work/test-all.log"

summary=$(grep -E '^release: [0-9]+ tests, asan: [0-9]+ tests$' "$work/test-all.log") ||
  fail "test-all printed no 'release: N tests, asan: M tests' line"
grep -Eq '^release pass: [1-9][0-9]* nvcc compile tests' "$work/test-all.log" ||
  fail "the release pass ran no nvcc compile test"
# Each pass ran the three fuzz targets on their seeds and mutants.
replayed=$(grep -Ec 'Test +#[0-9]+: fuzz:replay:(pipeline|jobs|extreme) [ .]*Passed' "$work/test-all.log" || true)
[ "$replayed" = 6 ] || fail "the fuzz targets' replay passed $replayed times, not 3 in each pass"

# The quickstart after the suite: build/ is its own, the passes' are untouched.
listed() { (cd "$1" && ctest -N | sed -n 's/^Total Tests: //p'); }
before="$(listed build-release) $(listed build-asan)"
scripts/quickstart >/dev/null
after="$(listed build-release) $(listed build-asan)"
[ "$before" = "$after" ] || fail "the quickstart changed the tests of test-all's passes: $before, then $after"
echo "fresh clone: $summary; $(grep -E '^release pass: [0-9]+ nvcc' "$work/test-all.log")"
