#!/usr/bin/env bash
# Writes tests/fuzz/dtplan.dict, the libFuzzer dictionary of the .dtp
# language: block kinds, every key and its other names and enum values
# (from docs/keys.md, generated from the key table planner/ir/keys.cpp), the
# catalog's GPU and model names, units and punctuation. Run it after the key
# table changes (scripts/fuzz does, when keys.md is newer).
set -euo pipefail
cd "$(dirname "$0")/../.."
{
  echo "# The .dtp language for libFuzzer: written by tests/fuzz/make_dict.sh"
  words() { sed 's/.*/"&"/'; }
  # Block kinds (the "## kind" headings of keys.md).
  sed -n 's/^## \([a-z_]*\)$/\1/p' docs/keys.md | words
  # Keys, other names and enum values: every `word` in the key rows.
  grep -E '^\| `' docs/keys.md | grep -oE '`[A-Za-z_][A-Za-z0-9_.-]*`' | tr -d '`' | words
  # The built-in catalog's names.
  grep -ohE '^[a-z]+ +[A-Za-z0-9_]+' planner/catalog/*.dtp | awk '{print $2}' | words
  # Units (DSL.md section 1), strategy values and syntax.
  printf '"%s"\n' B KB MB GB TB KiB MiB GiB TiB MB/s GB/s TB/s Mbit/s Gbit/s Tbit/s Gb/s \
    GFLOP/s TFLOP/s PFLOP/s ns us ms s % x auto true false node all
  printf '"%s"\n' ' : ' ' { ' ' } ' ' = ' '..' ', ' '; ' '\x0a' '#' '\"tp-cp-dp-pp\"' '\"\xe2\x80\xae\"' '#set ' 'strategy.' 'cluster.' \
    '1e308' '1e-300' '9223372036854775807' '9223372036854775808' '4294967296' '1_000_000' '0.5' '100 %' '8 x '
} | awk '!seen[$0]++' >tests/fuzz/dtplan.dict
echo "tests/fuzz/dtplan.dict: $(grep -vc '^#' tests/fuzz/dtplan.dict) entries"
