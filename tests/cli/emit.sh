# The bundle on disk: --emit writes DIR whole or not at all, refuses a DIR
# that is not empty without --force, never writes through a symbolic link,
# leaves nothing behind when a write fails (a file size limit, a full disk),
# and of two emits into one DIR at the same time one wins whole; --dot
# creates no directories; write failures name the path and the reason.
source "$(dirname "$0")/lib.sh"

plan="$PWD/plans/7b_2node.dtp"
mkdir "$TMP/work" && cd "$TMP/work" || exit 1

# No entry of WHERE is a staging directory left by an emit.
expect_no_leftovers() {  # WHERE
  checks=$((checks + 1))
  local left
  left=$(find "$1" -maxdepth 1 -name '.*.dtplan-*')
  [ -z "$left" ] || fail "staging left behind: $left"
}

expect_same_tree() {  # A B
  checks=$((checks + 1))
  diff -r "$1" "$2" >/dev/null || fail "$1 differs from $2: $(diff -r "$1" "$2" | head -5)"
}

# A fresh DIR (and its parents): every file, only the scripts executable.
expect_status 0 "$DTPLAN" "$plan" --strategy current --emit out/a/b --quiet
for f in plan.json sharding.dot skeleton/CMakeLists.txt skeleton/train_step.cu launch/slurm.sbatch launch/mpirun.sh; do
  checks=$((checks + 1))
  [ -s "out/a/b/$f" ] || fail "missing $f"
done
checks=$((checks + 1))
[ -x out/a/b/launch/mpirun.sh ] && [ -x out/a/b/launch/slurm.sbatch ] && [ ! -x out/a/b/plan.json ] &&
  [ ! -x out/a/b/skeleton/train_step.cu ] || fail "wrong modes: $(ls -lR out/a/b)"
expect_no_leftovers out/a
cp -r out/a/b ref_current
expect_status 0 "$DTPLAN" "$plan" --strategy current --set training.framework=deepspeed --set current.zero=2 --emit ref_zero2 --quiet

# An existing empty directory is filled; a trailing slash names the same DIR.
mkdir empty
expect_status 0 "$DTPLAN" "$plan" --strategy current --emit empty/ --quiet
expect_same_tree empty ref_current

# Not empty: refused without --force, left as it is.
mkdir full && echo keep >full/notes.txt
expect_status 2 "$DTPLAN" "$plan" --strategy current --emit full
expect_contains "$TMP/err" "error: cannot write the bundle to 'full': the directory is not empty (--force replaces it)"
checks=$((checks + 1))
[ "$(ls full)" = notes.txt ] || fail "a refused DIR was changed: $(ls full)"
expect_status 0 "$DTPLAN" "$plan" --strategy current --emit full --force --quiet
expect_same_tree full ref_current
expect_no_leftovers .

# A symbolic link planted in DIR is not written through, with or without --force.
echo victim >victim
mkdir planted && ln -s "$TMP/work/victim" planted/plan.json && ln -s "$TMP/work/victim" planted/mpirun.sh
expect_status 2 "$DTPLAN" "$plan" --strategy current --emit planted
expect_status 0 "$DTPLAN" "$plan" --strategy current --emit planted --force --quiet
checks=$((checks + 1))
[ "$(cat victim)" = victim ] && [ ! -x victim ] || fail "the link target was written or made executable"
checks=$((checks + 1))
[ ! -L planted/plan.json ] && [ ! -e planted/mpirun.sh ] || fail "the planted links survived"
expect_same_tree planted ref_current

# DIR itself a symbolic link, or a file: refused.
mkdir real && ln -s real link
expect_status 2 "$DTPLAN" "$plan" --strategy current --emit link --force
expect_contains "$TMP/err" "error: cannot write the bundle to 'link': it is a symbolic link"
checks=$((checks + 1))
[ -z "$(ls -A real)" ] || fail "written through a linked DIR"
echo x >afile
expect_status 2 "$DTPLAN" "$plan" --strategy current --emit afile
expect_contains "$TMP/err" "error: cannot write the bundle to 'afile': it exists and is not a directory"
expect_status 2 "$DTPLAN" "$plan" --strategy current --emit afile/sub
expect_contains "$TMP/err" "error: cannot create directory 'afile/sub': Not a directory"

# A write that fails half-way (a 16 KiB file size limit stops
# train_step.cu): the reason and the path, and nothing left, not even over
# an old bundle replaced with --force.
# limited N CMD...: CMD under a file size limit of N KiB, with SIGXFSZ
# ignored so that the write fails with EFBIG instead of killing it.
cat >limited <<'SH'
#!/bin/bash
trap '' XFSZ
ulimit -f "$1"
shift
exec "$@"
SH
chmod +x limited
expect_status 2 ./limited 16 "$DTPLAN" "$plan" --strategy current --emit small --quiet
expect_contains "$TMP/err" "error: cannot write 'small/skeleton/train_step.cu': File too large"
checks=$((checks + 1))
[ ! -e small ] || fail "a failed emit left 'small'"
expect_no_leftovers .
expect_status 2 ./limited 16 "$DTPLAN" "$plan" --strategy current --set training.framework=deepspeed --set current.zero=2 --emit full --force --quiet
expect_same_tree full ref_current
expect_no_leftovers .

# A full disk, where a small tmpfs can be mounted (root with CAP_SYS_ADMIN).
mkdir disk
if mount -t tmpfs -o size=32k tmpfs disk 2>/dev/null; then
  expect_status 2 "$DTPLAN" "$plan" --strategy current --emit disk/out --quiet
  expect_contains "$TMP/err" "error: cannot write 'disk/out/skeleton/train_step.cu': No space left on device"
  checks=$((checks + 1))
  [ -z "$(ls -A disk)" ] || fail "a failed emit left files on the full disk: $(ls -A disk)"
  umount disk
else
  echo "note: cannot mount a tmpfs here; the full-disk case is covered by the file size limit above"
fi

# Two emits into one DIR at the same time: one wins with its whole bundle,
# the other fails; with --force both succeed and the last one's stays whole.
for round in 1 2 3 4 5 6; do
  rm -rf race
  force=
  if [ "$round" -gt 3 ]; then
    mkdir race && echo old >race/old
    force=--force
  fi
  "$DTPLAN" "$plan" --strategy current --emit race $force --quiet >/dev/null 2>"$TMP/err_a" &
  a=$!
  "$DTPLAN" "$plan" --strategy current --set training.framework=deepspeed --set current.zero=2 --emit race $force --quiet >/dev/null 2>"$TMP/err_b" &
  b=$!
  wait $a; ra=$?
  wait $b; rb=$?
  checks=$((checks + 1))
  if [ -z "$force" ]; then
    [ $((ra + rb)) = 2 ] && { [ $ra = 0 ] || [ $rb = 0 ]; } ||
      fail "round $round: exit statuses $ra and $rb; $(cat "$TMP/err_a" "$TMP/err_b")"
  else
    [ $ra = 0 ] && [ $rb = 0 ] || fail "round $round (--force): exit statuses $ra and $rb"
  fi
  checks=$((checks + 1))
  diff -r race ref_current >/dev/null || diff -r race ref_zero2 >/dev/null ||
    fail "round $round: a mixed bundle: $(diff -r race ref_current | head -3)"
  expect_no_leftovers .
done

# --dot FILE: no directory is created for it; write errors say why.
expect_status 0 "$DTPLAN" "$plan" --strategy current --dot plan.dot --quiet
checks=$((checks + 1))
cmp -s plan.dot ref_current/sharding.dot || fail "--dot differs from the bundle's sharding.dot"
expect_status 2 "$DTPLAN" "$plan" --strategy current --dot missing/plan.dot
expect_contains "$TMP/err" "error: cannot write 'missing/plan.dot': No such file or directory"
checks=$((checks + 1))
[ ! -e missing ] || fail "--dot created a directory"
ln -s "$TMP/work/victim" linked.dot
expect_status 0 "$DTPLAN" "$plan" --strategy current --dot linked.dot --quiet
checks=$((checks + 1))
[ "$(cat victim)" = victim ] && [ ! -L linked.dot ] || fail "--dot wrote through a symbolic link"
expect_status 2 ./limited 4 "$DTPLAN" "$plan" --strategy current --dot big.dot
expect_contains "$TMP/err" "error: cannot write 'big.dot': File too large"
expect_no_leftovers .

# Names that start with '-' reach neither the option parser nor `dot` as options.
expect_status 0 "$DTPLAN" "$plan" --strategy current --emit=-d/-b --quiet
expect_same_tree ./-d/-b ref_current
expect_status 0 "$DTPLAN" "$plan" --strategy current --dot=-x.dot --quiet
checks=$((checks + 1))
[ -s ./-x.dot ] || fail "--dot=-x.dot not written"

finish
