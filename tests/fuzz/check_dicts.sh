#!/usr/bin/env bash
# Each entry of the fuzz dictionaries is one libFuzzer reads
# (FuzzerUtil.cpp ParseDictionaryFile): an optional name=, then a quoted
# string whose only escapes are \\, \" and \xAB. A line it cannot read stops
# the fuzz target before it runs (a "\n" did, 2026-12-07).
# usage: check_dicts.sh DICT...
status=0
for dict in "$@"; do
  n=0
  while IFS= read -r line || [ -n "$line" ]; do
    n=$((n + 1))
    trimmed="${line#"${line%%[![:space:]]*}"}"
    case "$trimmed" in '' | '#'*) continue ;; esac
    if ! printf '%s\n' "$trimmed" | grep -Eq '^([A-Za-z0-9_]+=)?"([^"\\]|\\\\|\\"|\\x[0-9A-Fa-f]{2})*"[[:space:]]*$'; then
      echo "$dict:$n: libFuzzer cannot read this entry: $line"
      status=1
    fi
  done <"$dict"
done
[ "$status" = 0 ] && echo "fuzz dictionaries: $# read, every entry libFuzzer's syntax"
exit "$status"
