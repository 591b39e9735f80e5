#!/usr/bin/env bash
# Streamed (out-of-core) `ctrecon fdk`: forced subvolumes / stores / batches
# give the plain run's bytes, --timings, interruption (fault injection and a
# real SIGINT) and --resume, the memory-budget options and previews of a
# multi-subvolume run. CPU backend throughout.
# Usage: bash cli_stream.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"
unset CTRECON_INJECT_STOP_AFTER_SLABS CTRECON_INJECT_ENOSPC_AFTER
# step DESC ARGS...: must exit 0
step() {
  local desc=$1; shift
  run "$@"
  if [ "$rc" -eq 0 ]; then ok "$desc"; else bad "$desc: exit $rc"; fi
}
has_err() { # has_err PATTERN DESC: stderr of the last run matches
  if grep -q -e "$1" "$ERR"; then ok "$2"; else bad "$2: no '$1' on stderr"; fi
}

NU=48 NV=40 NVIEWS=40 N=32
step "geometry" geometry --out g.json --nu $NU --nv $NV --du 9 --dv 12 --views $NVIEWS \
  --volume $N --voxel 8 --quiet
step "phantom" phantom --geometry g.json --out p.raw --device cpu --quiet
FDK=(fdk --geometry g.json --projections p.raw --device cpu)
step "plain fdk" "${FDK[@]}" --out plain.raw --quiet
[ "$(wc -c <plain.raw)" -eq $((N * N * N * 4)) ] && ok "plain output size" || bad "plain output size"

echo "# forced subvolumes, scratch store, small batches"
step "fdk --max-slab-slices 5 --store scratch --views-per-batch 7 --timings" \
  "${FDK[@]}" --out split.raw --max-slab-slices 5 --store scratch --views-per-batch 7 --timings
same split.raw plain.raw "streamed scratch run equals the plain run"
has_err '^plan: 7 subvolumes of 5 slices' "--timings prints the plan (7 subvolumes of 5 slices)"
has_err '^plan: .*scratch' "the plan keeps filtered views in scratch"
has_err '^plan: .*7 views' "the plan uses 7 views per batch"
for s in '(1) storage -> host' '(2) host -> device' '(3) weighting + ramp filter' \
         '(4) filtered -> host / scratch' '(5) filtered host / scratch -> device' \
         '(6) backprojection' '(7) subvolume device -> host' '(8) host -> storage' \
         'setup' 'total, overlapped'; do
  grep -qF -e "$s" "$ERR" && ok "--timings line '$s'" || bad "--timings line '$s' missing"
done
# The busy times are numbers; total (wall) is positive.
awk '/^total, overlapped/ { t = $NF } END { exit !(t > 0) }' "$ERR" && ok "total time is positive" ||
  bad "total time: $(grep total "$ERR")"
! grep -q '^plan:' "$OUT" && ok "--timings goes to stderr only" || bad "--timings on stdout"
clean "scratch run"
for args in "--max-slab-slices 1 --store host --views-per-batch 3" \
            "--max-slab-slices 7 --store auto" "--max-slab-slices 32 --store scratch" \
            "--views-per-batch 1"; do
  # shellcheck disable=SC2086
  step "fdk $args" "${FDK[@]}" --out v.raw $args --quiet --force  # one output, replaced
  same v.raw plain.raw "fdk $args equals the plain run"
done
step "fdk to nrrd in subvolumes" "${FDK[@]}" --out v.nrrd --max-slab-slices 6 --quiet
step "plain fdk to nrrd" "${FDK[@]}" --out plain.nrrd --quiet
same v.nrrd plain.nrrd "nrrd in subvolumes equals the plain nrrd"
clean "split runs"

echo "# interruption (CTRECON_INJECT_STOP_AFTER_SLABS) and --resume"
RES=("${FDK[@]}" --out r.raw --max-slab-slices 5 --views-per-batch 7)
CTRECON_INJECT_STOP_AFTER_SLABS=2 run "${RES[@]}"
[ "$rc" -ne 0 ] && ok "interrupted run exits non-zero ($rc)" || bad "interrupted run exit 0"
[ ! -e r.raw ] && ok "no final output after the interruption" || bad "r.raw exists"
[ -f r.raw.partial ] && [ -f r.raw.partial.journal ] && ok "r.raw.partial and its journal kept" ||
  bad "partial or journal missing: $(ls)"
has_err '--resume' "the interruption mentions --resume"
[ "$(grep -c '^slab .* done$' r.raw.partial.journal)" -eq 2 ] && ok "journal lists 2 subvolumes" ||
  bad "journal: $(cat r.raw.partial.journal)"
run "${RES[@]}"
[ "$rc" -ne 0 ] && ok "a second run without --resume fails ($rc)" || bad "second run without --resume exit 0"
has_err 'add --resume to continue it' "the refusal mentions --resume"
grep -q 'ctr_fdk_stream_options' "$ERR" && bad "the refusal names the API field: $(cat "$ERR")" ||
  ok "the library's field name is mapped to the option"
[ ! -e r.raw ] && [ -f r.raw.partial ] && [ -f r.raw.partial.journal ] &&
  ok "the refusal keeps the partial output" || bad "refusal changed files: $(ls)"
run "${RES[@]}" --resume --window hann
[ "$rc" -ne 0 ] && ok "--resume with another filter is refused ($rc)" || bad "--resume with another filter exit 0"
has_err 'cannot resume' "the refusal says it cannot resume"
run "${RES[@]}" --resume --timings
[ "$rc" -eq 0 ] && ok "--resume completes" || bad "--resume exit $rc"
same r.raw plain.raw "resumed output equals the plain run"
[ ! -e r.raw.partial ] && [ ! -e r.raw.partial.journal ] && ok "no .partial / .journal after --resume" ||
  bad "left after --resume: $(ls)"
run "${FDK[@]}" --out fresh.raw --resume
[ "$rc" -ne 0 ] && [ ! -e fresh.raw ] && ok "--resume without a journal fails, no output" ||
  bad "--resume without a journal: exit $rc"
has_err 'journal' "it names the missing journal"
clean "resume"

echo "# interruption and --resume of an OME-Zarr output: its complete rows of chunks are kept"
# 136 slices in subvolumes of 5: stopped after 26 (130 slices), rows 0 and 1
# of level 0 (slices 0..127) and row 0 of level 1 are on disk, the rest is
# computed again; every level of the result is the plain run's
step "geometry z.json" geometry --out z.json --nu 160 --nv 150 --du 1.5 --dv 1.5 --views 24 \
  --volume 136 --voxel 1 --quiet
step "phantom zp.raw" phantom --geometry z.json --out zp.raw --device cpu --quiet
ZR=(fdk --geometry z.json --projections zp.raw --device cpu --quiet --max-slab-slices 5)
mkdir -p ref
step "plain fdk to ref/z.zarr" "${ZR[@]}" --out ref/z.zarr
CTRECON_INJECT_STOP_AFTER_SLABS=26 run "${ZR[@]}" --out z.zarr
[ "$rc" -ne 0 ] && [ ! -e z.zarr ] && [ -d z.zarr.partial ] && [ -f z.zarr.partial.journal ] &&
  ok "interrupted: z.zarr.partial/ and its journal kept, no z.zarr" || bad "interrupted: rc $rc, $(ls)"
[ -s z.zarr.partial/0/c/1/0/0 ] && [ -s z.zarr.partial/1/c/0/0/0 ] && [ ! -e z.zarr.partial/0/c/2 ] &&
  ok "complete rows on disk: level 0 rows 0 and 1, level 1 row 0" || bad "rows: $(find z.zarr.partial | head -20)"
run "${ZR[@]}" --out z.zarr --resume
[ "$rc" -eq 0 ] && ok "--resume of z.zarr completes" || bad "--resume of z.zarr: exit $rc: $(cat "$ERR")"
grep -q "subvolume 2[0-5] (.*not complete when the run stopped" "$ERR" &&
  ! grep -q "subvolume 2 (" "$ERR" &&
  ok "only the subvolumes in rows still in memory are computed again" || bad "resume: $(cat "$ERR")"
[ -d z.zarr/2 ] && diff -r ref/z.zarr z.zarr >/dev/null &&
  ok "the resumed z.zarr is the plain run's, all 3 levels" || bad "z.zarr differs: $(diff -rq ref/z.zarr z.zarr)"
# a damaged chunk: its row is not trusted, its subvolumes are computed again
rm -rf z.zarr
CTRECON_INJECT_STOP_AFTER_SLABS=26 run "${ZR[@]}" --out z.zarr
head -c 20 z.zarr.partial/0/c/0/1/1 >cut && mv cut z.zarr.partial/0/c/0/1/1
run "${ZR[@]}" --out z.zarr --resume
[ "$rc" -eq 0 ] && grep -q "subvolume 0 (" "$ERR" && diff -r ref/z.zarr z.zarr >/dev/null &&
  ok "a truncated chunk's row is computed again, the result the plain run's" ||
  bad "damaged chunk: rc $rc: $(cat "$ERR")"
# sharded (--zarr-shard 2: shards of 128 slices): stopped after 130 slices,
# shard row 0 of level 0 (slices 0..127) is on disk, level 1's one row not
rm -rf z.zarr
step "plain fdk to ref/zs.zarr --zarr-shard 2" "${ZR[@]}" --out ref/zs.zarr --zarr-shard 2
CTRECON_INJECT_STOP_AFTER_SLABS=26 run "${ZR[@]}" --out zs.zarr --zarr-shard 2
[ "$rc" -ne 0 ] && [ -s zs.zarr.partial/0/c/0/1/1 ] && [ ! -e zs.zarr.partial/0/c/0/0/2 ] &&
  [ ! -e zs.zarr.partial/0/c/1 ] && [ ! -e zs.zarr.partial/1/c/0 ] &&
  ok "interrupted, sharded: level 0's shard row 0 on disk" || bad "sharded rows: rc $rc: $(find zs.zarr.partial | head -20)"
run "${ZR[@]}" --out zs.zarr --zarr-shard 2 --resume
[ "$rc" -eq 0 ] && grep -q "subvolume 25 (.*not complete when the run stopped" "$ERR" &&
  ! grep -q "subvolume 24 (" "$ERR" && grep -q '"sharding_indexed"' zs.zarr/0/zarr.json &&
  diff -r ref/zs.zarr zs.zarr >/dev/null &&
  ok "the resumed sharded zs.zarr is the plain run's, all 3 levels" ||
  bad "sharded resume: rc $rc: $(cat "$ERR"); $(diff -rq ref/zs.zarr zs.zarr)"
rm -rf ref z.zarr zs.zarr
clean "OME-Zarr resume"

echo "# memory budgets"
run "${FDK[@]}" --out m.raw --host-budget 1K
[ "$rc" -eq 1 ] && ok "--host-budget 1K exits 1" || bad "--host-budget 1K exit $rc"
has_err '(--host-budget)' "--host-budget 1K names --host-budget"
grep -q 'host_budget' "$ERR" && bad "the budget error names the API field: $(cat "$ERR")" ||
  ok "the budget error names the option, not host_budget"
[ ! -e m.raw ] && ok "no output for an impossible budget" || bad "m.raw exists"
run "${FDK[@]}" --out m.raw --gpu-budget banana
[ "$rc" -eq 2 ] && ok "--gpu-budget banana is a usage error (2)" || bad "--gpu-budget banana exit $rc"
has_err 'banana' "the usage error quotes the value"
run "${FDK[@]}" --out m.raw --host-budget 8X
[ "$rc" -eq 2 ] && ok "--host-budget 8X is a usage error (2)" || bad "--host-budget 8X exit $rc"
step "--gpu-budget 1K is ignored on the CPU" "${FDK[@]}" --out m.raw --gpu-budget 1K --host-budget 1G --quiet
same m.raw plain.raw "budgeted run equals the plain run"
run "${FDK[@]}" --out m2.raw --store none
[ "$rc" -eq 2 ] && ok "--store none is not a CLI choice (2)" || bad "--store none exit $rc"

echo "# previews of a multi-subvolume run"
step "fdk --preview in one subvolume" "${FDK[@]}" --out pv1.raw --preview one --quiet
step "fdk --preview in 7 subvolumes" "${FDK[@]}" --out pv7.raw --preview many --max-slab-slices 5 --quiet
for s in xy xz yz; do
  if [ -s "many_$s.png" ] && head -c 8 "many_$s.png" | grep -q PNG; then ok "many_$s.png written"
  else bad "many_$s.png missing"; fi
  same "many_$s.png" "one_$s.png" "$s preview equals the one-subvolume preview"
done

echo "# SIGINT during a longer run, then --resume"
step "geometry 128^3" geometry --out b.json --nu 192 --nv 192 --du 3 --dv 3 --views 360 \
  --volume 128 --voxel 2 --quiet
step "phantom 360 views" phantom --geometry b.json --out b.raw --device cpu --quiet
BIG=(fdk --geometry b.json --projections b.raw --device cpu --max-slab-slices 4 --quiet)
step "uninterrupted 128^3 run" "${BIG[@]}" --out b_full.raw
"$CTR" "${BIG[@]}" --out b.raw.out.raw >"$OUT" 2>"$ERR" &
pid=$!
# SIGINT once the first subvolume is journalled (polled, at most ~20 s).
for _ in $(seq 400); do
  grep -qs 'done$' b.raw.out.raw.partial.journal && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.05
done
kill -INT "$pid" 2>/dev/null
wait "$pid"
rc=$?
if [ "$rc" -eq 0 ]; then
  echo "note - the 128^3 run finished before the SIGINT arrived: SIGINT check SKIPPED"
else
  [ "$rc" -eq 130 ] && ok "SIGINT exits 130" || bad "SIGINT exit $rc"
  [ ! -e b.raw.out.raw ] && [ -f b.raw.out.raw.partial ] && [ -f b.raw.out.raw.partial.journal ] &&
    ok "SIGINT leaves the partial output and its journal" || bad "after SIGINT: $(ls)"
  has_err '--resume' "the interrupted run mentions --resume"
  has_err 'error: interrupted$' "it says 'interrupted'"
  grep -q 'progress callback' "$ERR" && bad "the library's wording: $(cat "$ERR")" || ok "not the library's wording"
  echo "     $(grep -c 'done$' b.raw.out.raw.partial.journal) of 32 subvolumes were journalled"
  step "--resume after SIGINT" "${BIG[@]}" --out b.raw.out.raw --resume
  same b.raw.out.raw b_full.raw "resumed after SIGINT equals the uninterrupted run"
fi
# SIGINT before any subvolume is finished: nothing is kept, nothing asks for --resume.
"$CTR" "${BIG[@]}" --max-slab-slices 128 --out b2.raw >"$OUT" 2>"$ERR" &
pid=$!
sleep 0.2
kill -INT "$pid" 2>/dev/null
wait "$pid"
rc=$?
if [ "$rc" -eq 130 ]; then
  [ ! -e b2.raw ] && [ ! -e b2.raw.partial ] && [ ! -e b2.raw.partial.journal ] &&
    ok "SIGINT in the first subvolume keeps nothing" || bad "SIGINT in the first subvolume: $(ls b2.raw*)"
  grep -q -e '--resume' "$ERR" && bad "nothing to resume, yet --resume is suggested" ||
    ok "no --resume suggested when nothing was finished"
else
  echo "note - the one-subvolume run ended with exit $rc before the SIGINT: check SKIPPED"
fi
clean "SIGINT"

finish
