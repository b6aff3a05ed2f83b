#!/bin/bash
# Installs the build tree into a temporary prefix with `cmake --install`,
# then configures, builds and runs tests/install/consumer against it with
# find_package(dtplan): the library works from outside the tree.
# usage: consume.sh BUILD_DIR SOURCE_DIR [CXX_FLAGS]
set -euo pipefail
build=$1 source=$2 flags=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
for f in include/dtplan/planner/lower/embedded.hpp include/dtplan/dsl/diagnostics.hpp \
         lib/cmake/dtplan/dtplanConfig.cmake bin/dtplan; do
  [ -e "$tmp/prefix/$f" ] || { echo "FAIL: the install lacks $f" >&2; exit 1; }
done
if [ -e "$tmp/prefix/include/dtplan/dsl/detail/grammar.hpp" ]; then
  echo "FAIL: the parser's internals were installed" >&2
  exit 1
fi
cmake -S "$source/tests/install/consumer" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$tmp/configure.log" ||
  { cat "$tmp/configure.log" >&2; exit 1; }
cmake --build "$tmp/build" -j2 >"$tmp/build.log" 2>&1 || { tail -30 "$tmp/build.log" >&2; exit 1; }
out=$("$tmp/build/consumer")
echo "$out"
case "$out" in
  "consumer: 'current' valid, step "*" s") ;;
  *) echo "FAIL: unexpected output" >&2; exit 1 ;;
esac
"$tmp/prefix/bin/dtplan" --version
