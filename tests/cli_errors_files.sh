#!/usr/bin/env bash
# Lost or left-behind data (issue 17): an output that is an input, outputs
# that collide, unwritable folders found before the work, the demos' own
# folders, temporaries after SIGTERM or of a killed process, --resume of a
# partial output changed on disk, a truncated one, and the resume summary.
# Usage: bash cli_errors_files.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"
unset CTRECON_INJECT_STOP_AFTER_SLABS CTRECON_INJECT_ENOSPC_AFTER
# refuses CODE DESC "NEEDLE1|NEEDLE2" ARGS...: exit CODE, every needle on stderr
refuses() {
  local want=$1 desc=$2 needles=$3 n why=""; shift 3
  run "$@"
  [ "$rc" -eq "$want" ] || why="$why exit $rc (expected $want);"
  IFS='|' read -ra n <<<"$needles"
  for needle in "${n[@]}"; do grep -qF -- "$needle" "$ERR" || why="$why no '$needle';"; done
  if [ -z "$why" ]; then ok "$desc: $(head -1 "$ERR")"; else bad "$desc:$why"; fi
}
sum() { cksum <"$1"; }

GEO="--nu 48 --nv 40 --du 9 --dv 12 --volume 32 --voxel 8 --quiet"
"$CTR" geometry --out g.json $GEO --views 40 || exit 1
"$CTR" phantom --geometry g.json --out p.nrrd --device cpu --quiet || exit 1
P=$(sum p.nrrd) G=$(sum g.json)

echo "# an output that is an input (exit 2, the input unchanged)"
refuses 2 "fdk --out = --projections" "--out 'p.nrrd'|same file|--projections 'p.nrrd'" \
  fdk --geometry g.json --projections p.nrrd --out p.nrrd --device cpu
ln -s p.nrrd link.nrrd
refuses 2 "fdk --out is a symlink to --projections" "--out 'link.nrrd'|--projections 'p.nrrd'" \
  fdk --geometry g.json --projections p.nrrd --out link.nrrd --device cpu
ln p.nrrd hard.nrrd
refuses 2 "fdk --out is a hard link of --projections" "--out 'hard.nrrd'|--projections 'p.nrrd'" \
  fdk --geometry g.json --projections p.nrrd --out hard.nrrd --device cpu
mkdir sub
refuses 2 "fdk --out through another path" "--out 'sub/../p.nrrd'|same file" \
  fdk --geometry g.json --projections p.nrrd --out sub/../p.nrrd --device cpu
refuses 2 "fdk --out = --geometry" "--out 'g.json'|--geometry" \
  fdk --geometry g.json --projections p.nrrd --out g.json --out-format raw --device cpu
refuses 2 "phantom --out = its --phantom file" "--out './ph.json'|--phantom 'ph.json'" \
  phantom --geometry g.json --phantom ph.json --out ./ph.json --format raw
refuses 2 "phantom --truth = --out" "--out 'x.nrrd'|--truth './x.nrrd'|same file" \
  phantom --geometry g.json --out x.nrrd --truth ./x.nrrd
refuses 2 "fbp --out = --flat" "--out 'p.nrrd'|--flat 'p.nrrd'" \
  fbp --projections s.nrrd --flat p.nrrd --out p.nrrd
[ "$(sum p.nrrd)" = "$P" ] && [ "$(sum g.json)" = "$G" ] && ok "inputs unchanged" || bad "an input changed"
[ ! -e x.nrrd ] && ok "nothing written" || bad "x.nrrd written"
# (a tool that overwrote them fails the cases above; later cases get good inputs)
"$CTR" geometry --out g.json $GEO --views 40
"$CTR" phantom --geometry g.json --out p.nrrd --device cpu --quiet

echo "# every output checked before the work"
refuses 1 "fdk --preview into a folder that takes no files" "--preview '/proc/vol'|'/proc'" \
  fdk --geometry g.json --projections p.nrrd --out v.nrrd --preview /proc/vol --device cpu
[ ! -e v.nrrd ] && ok "no reconstruction before the --preview check" || bad "v.nrrd written before --preview failed"
refuses 1 "fdk --preview into a missing folder" "--preview 'nodir/vol'|'nodir'" \
  fdk --geometry g.json --projections p.nrrd --out v.nrrd --preview nodir/vol --device cpu
refuses 1 "fbp --preview into a folder that takes no files" "--preview '/proc/x'" \
  fbp --sinograms s.nrrd --out v.nrrd --preview /proc/x
refuses 1 "pet recon --plot into a folder that takes no files" "--plot '/proc/crc.png'" \
  pet recon --data d.json --out v.nrrd --plot /proc/crc.png

echo "# one folder per demo"
run demo --parallel --size 32 --views 24 --slices 2 --device cpu --quiet
[ "$rc" -eq 0 ] && [ -f demo-parallel-out/recon.nrrd ] && [ ! -e demo-out ] &&
  ok "demo --parallel writes demo-parallel-out/, not demo-out/" || bad "demo --parallel: exit $rc, $(ls)"
run demo --size 32 --views 24 --det 32 --device cpu --quiet
[ "$rc" -eq 0 ] && [ -f demo-out/recon.nrrd ] && [ ! -e demo-out/sinograms.tif ] &&
  ok "demo writes demo-out/ alone" || bad "demo: exit $rc, $(ls demo-out)"
# one --out-dir for two demos: the second is refused (their files would mix),
# the first's files kept; the same demo again is refused too (its files would
# be replaced), naming --force; --force overrides both
run demo --parallel --size 32 --views 24 --slices 2 --device cpu --quiet --out-dir demo-out
[ "$rc" -eq 2 ] && grep -qF -- "--out-dir 'demo-out' holds" "$ERR" && grep -qF -- "--force" "$ERR" &&
  grep -qF "(of \`ctrecon demo\`)" "$ERR" && ok "demo --parallel into demo's folder: refused, naming it" ||
  bad "demo --parallel into demo-out: exit $rc, $(cat "$ERR")"
[ ! -e demo-out/sinograms.tif ] && [ -f demo-out/geometry.json ] && ok "nothing written there" ||
  bad "demo-out: $(ls demo-out)"
cp demo-out/recon.nrrd first.nrrd
run demo --size 32 --views 24 --det 32 --device cpu --quiet
[ "$rc" -eq 2 ] && grep -qF -- "--out-dir 'demo-out' holds the files of an earlier run of demo" "$ERR" &&
  grep -qF -- "add --force" "$ERR" && cmp -s demo-out/recon.nrrd first.nrrd &&
  ok "demo again into its own folder: refused, naming --force, its files kept" ||
  bad "demo again: exit $rc, $(cat "$ERR")"
step "demo again with --force" demo --size 32 --views 24 --det 32 --device cpu --quiet --force
mkdir -p mine && echo keep > mine/notes.txt
run demo --size 32 --views 24 --det 32 --device cpu --quiet --out-dir mine
[ "$rc" -eq 2 ] && grep -qF "'notes.txt'" "$ERR" && [ ! -e mine/recon.nrrd ] &&
  ok "a folder of other files: refused" || bad "mine: exit $rc, $(cat "$ERR")"
step "--force writes there anyway" demo --size 32 --views 24 --det 32 --device cpu --quiet --out-dir mine --force
[ -f mine/recon.nrrd ] && [ "$(cat mine/notes.txt)" = keep ] && ok "--force: written, other files kept" ||
  bad "--force: $(ls mine)"
rm -rf demo-out demo-parallel-out mine

echo "# temporaries: SIGTERM, and those of a killed process"
"$CTR" geometry --out big.json --nu 200 --nv 160 --du 2.2 --dv 2.2 --volume 160 --voxel 1.6 \
  --views 180 --quiet 2>/dev/null
"$CTR" phantom --geometry big.json --out big.nrrd --device cpu --quiet 2>/dev/null
"$CTR" fdk --geometry big.json --projections big.nrrd --out vol.tif --device cpu --threads 1 \
  --quiet >"$OUT" 2>"$ERR" &
pid=$!
seen=0
while kill -0 $pid 2>/dev/null; do
  if compgen -G "vol.tif.tmp.$pid.*" >/dev/null; then seen=1; break; fi
done
if [ $seen -eq 1 ]; then
  kill -TERM $pid
  wait $pid; rc=$?
  left=$(compgen -G "vol.tif.tmp.*")
  [ "$rc" -eq 130 ] && [ -z "$left" ] && [ ! -e vol.tif ] &&
    ok "SIGTERM during a multi-page TIFF write: exit 130, no temporary left" ||
    bad "SIGTERM: exit $rc, left: $left $(ls vol.tif* 2>/dev/null)"
  grep -q "interrupted" "$ERR" && ok "SIGTERM says interrupted" || bad "SIGTERM: no 'interrupted'"
else
  wait $pid
  bad "the fdk run ended before its temporary was seen; make big.json larger"
fi
rm -f vol.tif
dead=$(bash -c 'echo $BASHPID')
touch "v.tif.tmp.$dead.0" "v.tif.tmp.$$.0" "other.tif.tmp.$dead.0" "v.tif.scratch.$dead.3" \
  "v.tiff.tmp.$dead.0"
run fdk --geometry g.json --projections p.nrrd --out v.tif --device cpu --quiet
[ "$rc" -eq 0 ] && [ ! -e "v.tif.tmp.$dead.0" ] && [ ! -e "v.tif.scratch.$dead.3" ] &&
  ok "a dead process's temporary and scratch file of --out are removed" ||
  bad "stale temporary: exit $rc, $(ls v.tif*)"
grep -qF "removed 'v.tif.tmp.$dead.0'" "$ERR" && grep -qF "process $dead" "$ERR" &&
  ok "the removal is reported" || bad "no report of the removal"
[ -e "v.tif.tmp.$$.0" ] && [ -e "other.tif.tmp.$dead.0" ] && [ -e "v.tiff.tmp.$dead.0" ] &&
  ok "a running process's temporary and other outputs' (v.tiff) are kept" || bad "removed too much: $(ls)"
mkdir pv
touch "pv/vol_xy.png.tmp.$dead.1" "pv/vol2.nrrd.tmp.$dead.0"
run fdk --geometry g.json --projections p.nrrd --out v2.nrrd --preview pv/vol --device cpu --quiet
[ ! -e "pv/vol_xy.png.tmp.$dead.1" ] && [ -e "pv/vol2.nrrd.tmp.$dead.0" ] &&
  ok "--preview prefix: its PREFIX_xy.png temporary removed, vol2.nrrd's kept" || bad "preview temporaries: $(ls pv)"
rm -rf pv v2.nrrd
rm -f v.tif* other.tif*

echo "# --resume: checksums, a truncated partial output, the summary"
FDK=(fdk --geometry g.json --projections p.nrrd --device cpu --max-slab-slices 5 --views-per-batch 7)
run "${FDK[@]}" --out plain.raw
range=$(grep '^values' "$OUT")
CTRECON_INJECT_STOP_AFTER_SLABS=3 run "${FDK[@]}" --out r.raw
[ "$rc" -ne 0 ] && [ -f r.raw.partial.journal ] && ok "interrupted after 3 subvolumes" || bad "no partial run"
# subvolume 1 (slices 5..9): one float of slice 7 changed on disk
printf '\x01\x02\x03\x04' | dd of=r.raw.partial bs=1 seek=$((7 * 32 * 32 * 4 + 400)) conv=notrunc status=none
run "${FDK[@]}" --out r.raw --resume
[ "$rc" -eq 0 ] && cmp -s r.raw plain.raw && ok "a slab changed on disk is recomputed: output = plain run" ||
  bad "resume over a changed slab: exit $rc, $(cmp r.raw plain.raw 2>&1)"
grep -qF "subvolume 1 (slices 5..9) changed on disk" "$ERR" && ok "the changed subvolume is named" ||
  bad "no warning naming subvolume 1"
grep -q "resumed: 10 of 32 slices" "$OUT" && ok "the summary says what was resumed (2 unchanged subvolumes)" ||
  bad "summary: $(cat "$OUT")"
[ -n "$range" ] && [ "$(grep '^values' "$OUT" | sed 's/ (the whole volume)//')" = "$range" ] &&
  ok "the resumed run's value range is the whole volume's ($range)" ||
  bad "resumed range '$(grep '^values' "$OUT")', plain '$range'"
grep -q "this run computed 22 slices" "$OUT" && ok "the timing is labelled as this run's work" ||
  bad "timing label: $(cat "$OUT")"
rm -f r.raw
mkdir st plain_st
run "${FDK[@]}" --out 'plain_st/v_%03d.tif'
CTRECON_INJECT_STOP_AFTER_SLABS=3 run "${FDK[@]}" --out 'st/v_%03d.tif'
cp st/v_012.tif.partial st/v_006.tif.partial # an image of subvolume 1 replaced by another
run "${FDK[@]}" --out 'st/v_%03d.tif' --resume
diff -r st plain_st >/dev/null && [ "$rc" -eq 0 ] && grep -qF "subvolume 1 (slices 5..9) changed" "$ERR" &&
  ok "TIFF stack: a changed image is found, its subvolume recomputed" ||
  bad "TIFF stack resume: exit $rc, $(diff -r st plain_st 2>&1 | head -2)"
# 6 of 7 subvolumes resumed: only slices 30..31 computed, the extremes lie in the resumed ones
CTRECON_INJECT_STOP_AFTER_SLABS=6 run "${FDK[@]}" --out r.raw
run "${FDK[@]}" --out r.raw --resume
[ -n "$range" ] && [ "$(grep '^values' "$OUT" | sed 's/ (the whole volume)//')" = "$range" ] &&
  ok "after resuming 6 of 7 subvolumes the range is still the whole volume's" ||
  bad "range after resuming 6 of 7: '$(grep '^values' "$OUT")', plain '$range'"
rm -f r.raw
CTRECON_INJECT_STOP_AFTER_SLABS=3 run "${FDK[@]}" --out r.raw
truncate -s 20000 r.raw.partial
run "${FDK[@]}" --out r.raw --resume
[ "$rc" -ne 0 ] && [ ! -e r.raw ] && ok "a truncated partial output is refused (exit $rc)" || bad "truncated: exit $rc"
grep -q "cannot be resumed" "$ERR" && ! grep -q "repeat the command with --resume" "$ERR" &&
  grep -q "run without --resume to start over" "$ERR" &&
  ok "it says to start over, not to --resume" || bad "truncated: $(cat "$ERR")"

echo "# a run still going holds its output: a second one names its process"
# hold FILE: a process that holds a write lock (fcntl, the run lock) on FILE
# until release; HOLDER is its pid
hold() {
  rm -f held.flag
  python3 -c 'import fcntl, sys, time
f = open(sys.argv[1], "a"); fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
open("held.flag", "w").close(); time.sleep(120)' "$1" &
  HOLDER=$!
  for _ in $(seq 100); do [ -e held.flag ] && break; sleep 0.1; done
}
release() { kill "$HOLDER" 2>/dev/null; wait "$HOLDER" 2>/dev/null; }
if command -v python3 > /dev/null; then
  CTRECON_INJECT_STOP_AFTER_SLABS=2 run "${FDK[@]}" --out lk.raw
  before=$(sum lk.raw.partial)
  hold lk.raw.partial.journal
  refuses 3 "fdk over a run still going" "lk.raw.partial.journal' is in use by process $HOLDER" \
    "${FDK[@]}" --out lk.raw
  grep -q "delete" "$ERR" && bad "it says to delete the live run's files" || ok "no advice to delete"
  refuses 3 "fdk --resume of a run still going" "in use by process $HOLDER" "${FDK[@]}" --out lk.raw --resume
  grep -q "delete\|repeat the command" "$ERR" && bad "--resume: advice for a run that ended" ||
    ok "--resume: no advice to delete or resume"
  [ "$(sum lk.raw.partial)" = "$before" ] && ok "the live run's partial output is untouched" ||
    bad "partial output changed"
  release
  refuses 3 "fdk over a stale partial: the advice to resume or delete" "--resume|delete" "${FDK[@]}" --out lk.raw
  step "fdk --resume once the lock is free" "${FDK[@]}" --out lk.raw --resume
  hold it.raw.checkpoint.lock
  refuses 3 "iterate over a run still going" "it.raw.checkpoint' is in use by process $HOLDER" \
    iterate --geometry g.json --projections p.nrrd --device cpu --quiet --iterations 2 --out it.raw
  release
  step "iterate once the lock is free" iterate --geometry g.json --projections p.nrrd --device cpu \
    --quiet --iterations 2 --out it.raw
  [ ! -e it.raw.checkpoint.lock ] && [ ! -e it.raw.checkpoint ] && ok "no lock or checkpoint left" ||
    bad "left: $(ls it.raw*)"
else
  echo "skip - no python3 to hold a lock"
fi

echo "# iterate: the history in the checkpoint, no file it was not asked to write"
IT=(iterate --geometry g.json --projections p.nrrd --device cpu --quiet)
lines() { wc -l < "$1" | tr -d ' '; }
printf 'mine\n' > conv.csv
run "${IT[@]}" --iterations 2 --out ck.raw --checkpoint conv
[ "$rc" -eq 0 ] && [ "$(cat conv.csv)" = mine ] && ok "--checkpoint conv leaves conv.csv alone" ||
  bad "conv.csv: exit $rc, '$(head -2 conv.csv)'"
[ ! -e conv ] && ok "the checkpoint is removed after the run" || bad "conv left behind"
run "${IT[@]}" --iterations 2 --out ck.raw --residuals ck.raw.checkpoint.csv --force
[ "$rc" -eq 0 ] && [ -f ck.raw.checkpoint.csv ] && [ "$(lines ck.raw.checkpoint.csv)" -eq 3 ] &&
  ok "--residuals OUT.checkpoint.csv is written and kept" || bad "--residuals OUT.checkpoint.csv: exit $rc, $(ls ck.raw*)"
refuses 2 "--residuals that is the checkpoint" "--residuals 'conv'|--checkpoint 'conv'|same file" \
  "${IT[@]}" --iterations 2 --out ck.raw --checkpoint conv --residuals conv
# a straight run of 5, for the history's figures
run "${IT[@]}" --iterations 5 --out h5.raw --residuals straight.csv --checkpoint-every 0
cut -d, -f1-4 straight.csv > straight4.csv
# 5 iterations, a checkpoint every 2: the disk fills at the second one (iteration 4)
CTRECON_INJECT_ENOSPC_AFTER=200000 run "${IT[@]}" --iterations 5 --out h.raw --checkpoint-every 2
[ "$rc" -ne 0 ] && grep -qF "the state after iteration 2 is in h.raw.checkpoint" "$ERR" &&
  ok "disk full at iteration 4: the message names iteration 2, what the checkpoint holds" ||
  bad "disk full at iteration 4: exit $rc, $(cat "$ERR")"
# a refused resume (another algorithm) keeps the checkpoint and its history, and names the algorithms
refuses 3 "--resume with another algorithm" "its algorithm is sirt, this run's cgls" \
  "${IT[@]}" --iterations 5 --out h.raw --resume --algorithm cgls
run "${IT[@]}" --iterations 5 --out h.raw --checkpoint-every 2 --resume --residuals resumed.csv
cut -d, -f1-4 resumed.csv > resumed4.csv
[ "$rc" -eq 0 ] && [ "$(lines resumed.csv)" -eq 6 ] && cmp -s straight4.csv resumed4.csv &&
  ok "the resumed run's --residuals holds iterations 1..5, those of the straight run" ||
  bad "resumed table: exit $rc, $(cat resumed.csv)"
cmp -s h5.raw h.raw && ok "the resumed volume = the straight one" || bad "resumed volume differs"
# the disk fills at the first checkpoint: there is none, and the message says so
CTRECON_INJECT_ENOSPC_AFTER=1000 run "${IT[@]}" --iterations 3 --out h1.raw
[ "$rc" -ne 0 ] && grep -qF "no checkpoint was" "$ERR" && ! grep -q "state after iteration" "$ERR" &&
  ok "disk full at the first checkpoint: the message says there is none" ||
  bad "disk full at iteration 1: exit $rc, $(cat "$ERR")"
[ ! -e h1.raw.checkpoint ] && ok "no checkpoint left" || bad "h1.raw.checkpoint exists"
finish
