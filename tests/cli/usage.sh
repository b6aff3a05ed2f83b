# The command line: help, version, usage errors (exit 2), overrides, formats.
source "$(dirname "$0")/lib.sh"

expect_status 0 "$DTPLAN" --help
expect_contains "$TMP/out" "usage: dtplan FILE"
expect_contains "$TMP/out" "examples:"
expect_status 0 "$DTPLAN" --version
expect_contains "$TMP/out" "dtplan "
expect_status 2 "$DTPLAN"
expect_contains "$TMP/err" "dtplan: error: no input file"
expect_status 2 "$DTPLAN" plans/7b_2node.dtp --optimise
expect_contains "$TMP/err" "unknown option '--optimise'; did you mean '--optimize'?"
expect_status 2 "$DTPLAN" plans/7b_2node.dtp --format yaml
expect_contains "$TMP/err" "--format needs 'text' or 'json'"
expect_status 2 "$DTPLAN" plans/7b_2node.dtp --top 0
expect_status 2 "$DTPLAN" does/not/exist.dtp
expect_contains "$TMP/err" "dtplan: error: cannot read 'does/not/exist.dtp'"
expect_status 2 "$DTPLAN" plans/7b_2node.dtp --strategy curent
expect_contains "$TMP/err" "no strategy 'curent' in 'plans/7b_2node.dtp'; did you mean 'current'?"
expect_status 2 "$DTPLAN" plans/7b_2node.dtp --strategy zzzzzz
expect_contains "$TMP/err" "no strategy 'zzzzzz' in 'plans/7b_2node.dtp'; its strategies: 'current', 'search'"
printf 'model m : llama2_7b {}\ncluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\ntraining { global_batch = 8 }\n' \
  >"$TMP/bare.dtp"
expect_status 2 "$DTPLAN" "$TMP/bare.dtp" --strategy x
expect_contains "$TMP/err" "no strategy 'x' in '$TMP/bare.dtp'; it has no strategy block"

# --set goes through the file's grammar and lowering.
expect_status 2 "$DTPLAN" plans/7b_2node.dtp --set cluster.nodes=two
expect_contains "$TMP/err" "<--set>:1:"
expect_status 2 "$DTPLAN" plans/7b_2node.dtp --set cluster.inter_node=80GiB
expect_contains "$TMP/err" "<--set>:1:"
expect_status 0 "$DTPLAN" plans/7b_2node.dtp --strategy current --set cluster.nodes=4 --set current.dp=32 --format json
expect_contains "$TMP/out" "\"gpus\": 32"
expect_contains "$TMP/out" "\"dp\": 32"

# --dump shows each stage.
expect_status 0 "$DTPLAN" plans/7b_2node.dtp --dump ast
expect_contains "$TMP/out" "layers"
expect_status 0 "$DTPLAN" plans/7b_2node.dtp --dump ir
expect_contains "$TMP/out" "inter_node"

# A value that looks like an option is not taken as the value: no
# directory '--optimize' is created; --flag=VALUE takes any VALUE.
root=$PWD
mkdir "$TMP/cwd" && cd "$TMP/cwd" || exit 1
expect_status 2 "$DTPLAN" "$root/plans/7b_2node.dtp" --emit --optimize
expect_contains "$TMP/err" "dtplan: error: --emit needs a directory"
checks=$((checks + 1))
[ -z "$(ls -A)" ] || fail "a flag was taken as --emit's directory: $(ls -A)"
expect_status 2 "$DTPLAN" "$root/plans/7b_2node.dtp" --dot --quiet
expect_contains "$TMP/err" "dtplan: error: --dot needs a file name"
expect_status 2 "$DTPLAN" "$root/plans/7b_2node.dtp" --strategy --optimize
expect_contains "$TMP/err" "dtplan: error: --strategy needs a strategy name"
expect_status 2 "$DTPLAN" "$root/plans/7b_2node.dtp" --top -3
expect_contains "$TMP/err" "dtplan: error: --top needs a number from 1 to 1000"

# '--' ends the options: a file named '-x' after it is the input.
cp "$root/plans/7b_2node.dtp" ./-x
expect_status 2 "$DTPLAN" -x
expect_contains "$TMP/err" "dtplan: error: unknown option '-x'"
expect_status 0 "$DTPLAN" --strategy current --quiet -- -x
expect_contains "$TMP/out" "current: valid"
expect_status 2 "$DTPLAN" -- -x --quiet
expect_contains "$TMP/err" "dtplan: error: more than one input file ('-x' and '--quiet')"
expect_status 2 "$DTPLAN" ./-x --force
expect_contains "$TMP/err" "dtplan: error: --force only applies to --emit DIR"
cd "$root" || exit 1

# --strategy names the plan to emit, also with --optimize (the README's promise).
expect_status 0 "$DTPLAN" plans/7b_2node.dtp --strategy current --optimize --emit "$TMP/named"
expect_contains "$TMP/err" "dtplan: wrote the bundle for 'current' to $TMP/named"
expect_contains "$TMP/named/plan.json" '"name": "current"'
expect_status 0 "$DTPLAN" plans/7b_2node.dtp --optimize --emit "$TMP/best" --quiet
expect_contains "$TMP/best/plan.json" '"name": "search#1"'
# A named strategy that is not valid leaves nothing to emit, whatever the search found.
expect_status 1 "$DTPLAN" plans/7b_2node.dtp --strategy current --set current.zero=0 --optimize --emit "$TMP/none"
expect_contains "$TMP/err" "dtplan: error: strategy 'current' is not valid: no plan to emit"

# A free strategy named without --optimize: it is free, and --optimize searches it.
expect_status 2 "$DTPLAN" plans/7b_2node.dtp --strategy search
expect_contains "$TMP/err" "dtplan: error: strategy 'search' has free keys: --optimize searches it"
expect_status 0 "$DTPLAN" plans/7b_2node.dtp --strategy search --optimize --quiet
expect_contains "$TMP/out" "search#1: valid"

# A file whose strategies are all free needs --optimize.
printf 'model m : llama2_7b {}\ncluster c { nodes = 1\n gpus_per_node = 8\n gpu = H100_SXM }\ntraining { global_batch = 64 }\nstrategy s { tp = auto }\n' >"$TMP/free.dtp"
expect_status 2 "$DTPLAN" "$TMP/free.dtp"
expect_contains "$TMP/err" "has no fixed strategy to check; --optimize searches its free strategies"

# The help's examples run as written (from a directory holding plans/, so
# that --emit writes there), each to a valid plan.
expect_status 0 "$DTPLAN" --help
sed -n '/^examples:$/,$p' "$TMP/out" | sed -n 's/^  dtplan //p' >"$TMP/examples"
checks=$((checks + 1))
[ "$(wc -l <"$TMP/examples")" -ge 4 ] || fail "the help has fewer than 4 examples: $(cat "$TMP/examples")"
mkdir "$TMP/examples-cwd" && ln -s "$root/plans" "$TMP/examples-cwd/plans"
while IFS= read -r example; do
  checks=$((checks + 1))
  # shellcheck disable=SC2086 # an example is words, split as the shell would
  (cd "$TMP/examples-cwd" && timeout 60 "$DTPLAN" $example >/dev/null 2>"$TMP/err") ||
    fail "the help's example 'dtplan $example' does not run to a valid plan: $(head -c 600 "$TMP/err")"
done <"$TMP/examples"

# The README's and DSL.md's synopsis is the help's ($TMP/out still holds
# it: the examples wrote elsewhere), and the README's diagnostic is what
# dtplan prints.
squash() { tr -s ' \n' ' ' | sed 's/^ //; s/ $//'; }
help_synopsis=$(sed -n '1,/^ *\[--from/p' "$TMP/out" | sed '1s/^usage: //; /^  *--help/d; s/^       dtplan --help.*//' | squash)
readme_synopsis=$(sed -n '/^dtplan FILE \[--optimize\]/,/^```$/p' README.md | sed '$d' | squash)
spec_synopsis=$(sed -n '/^dtplan FILE \[--optimize\]/,/^dtplan --help/p' docs/spec/DSL.md | sed '$d' | squash)
checks=$((checks + 2))
[ "$help_synopsis" = "$readme_synopsis" ] ||
  fail "README's synopsis differs from the help's: '$readme_synopsis' against '$help_synopsis'"
[ "$help_synopsis" = "$spec_synopsis" ] ||
  fail "docs/spec/DSL.md's synopsis differs from the help's: '$spec_synopsis' against '$help_synopsis'"
demo=tests/golden/illegal/016_out_of_memory_zero0.dtp
expect_status 1 "$DTPLAN" "$demo"
sed -n "\|^\$ build/cli/dtplan $demo\$|,/^\`\`\`\$/p" README.md | sed '1d; $d' >"$TMP/readme-diagnostic"
checks=$((checks + 1))
[ -s "$TMP/readme-diagnostic" ] && diff "$TMP/readme-diagnostic" "$TMP/err" >/dev/null ||
  fail "README's diagnostic for $demo is not what dtplan prints: $(diff "$TMP/readme-diagnostic" "$TMP/err" | head -c 600)"

finish
