#!/usr/bin/env bash
# Distributed `ctrecon fdk` and `ctrecon fbp` under mpirun, ranks on this
# machine (CPU backend, oversubscribed): outputs byte-identical to one
# process for raw, NRRD and TIFF stacks with 2 and 3 ranks; a 3-rank run
# killed mid-way resumed with 2 ranks (and with 1 process, and a one-process
# run resumed under mpirun) byte-identical; a rank slowed down has its work
# taken over; a bad input seen by one rank only, a file missing on one rank
# and a hung rank stop every rank with one message naming the rank, no final
# file; commands that do not distribute refuse to run on several ranks.
# Skipped (77) when this ctrecon has no MPI or mpirun is missing.
# Usage: bash cli_mpi.sh path/to/ctrecon   (the test build: it has the hooks)
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib_cli.sh" "$@"
unset CTRECON_INJECT_STOP_AFTER_SLABS CTRECON_INJECT_KILL_AFTER_SLABS CTRECON_INJECT_HANG \
  CTRECON_INJECT_RANK CTRECON_INJECT_DELAY_MS CTRECON_INJECT_ENOSPC_AFTER
MPIRUN=$(command -v mpirun || command -v mpiexec || true)
if ! "$CTR" info | grep -q '^  mpi  *yes' || [ -z "$MPIRUN" ]; then
  echo "SKIP: this ctrecon has no MPI support or mpirun is missing (scripts/install-deps.sh)"
  exit 77
fi
# Open MPI in a test container: root is allowed, more ranks than cores, no
# single-copy shared memory (ptrace is often forbidden there).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
# In the sanitizer build: Open MPI's own leaks at MPI_Finalize suppressed by
# library (tests/lsan-openmpi.supp); the slow unwinder gives the whole stack
# to match them against (the fast one stops at Open MPI's first frame).
if [ -n "${ASAN_OPTIONS:-}" ]; then
  export ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0"
  export LSAN_OPTIONS="${LSAN_OPTIONS:-}:suppressions=$HERE/lsan-openmpi.supp:print_suppressions=0"
fi
# mpi N ARGS...: ctrecon ARGS on N ranks, one thread each; stdout/stderr/rc as run().
mpi() {
  local n=$1; shift
  "$MPIRUN" --oversubscribe -np "$n" "$CTR" "$@" --threads 1 >"$OUT" 2>"$ERR"; rc=$?
  if grep -q "runtime error: " "$ERR"; then cat "$ERR" >&2; fi
}
# Every rank's exit status into rc.R; mpirun waits for every rank instead
# of ending the job when the first exits non-zero (its default; it then
# exits 0 itself, so only the ranks' statuses count).
cat >rankrc.sh <<'EOF'
"$@"; s=$?; echo $s >"rc.${OMPI_COMM_WORLD_RANK:-x}"; exit $s
EOF
mpi_rc() {
  local n=$1; shift
  rm -f rc.*
  OMPI_MCA_orte_abort_on_non_zero_status=0 "$MPIRUN" --oversubscribe -np "$n" bash rankrc.sh \
    "$CTR" "$@" --threads 1 >"$OUT" 2>"$ERR"
  rc=$?
}
same_stack() { # same_stack DIR_A DIR_B COUNT DESC: COUNT identical images
  local n=0 f
  for f in "$1"/*.tif; do cmp -s "$f" "$2/$(basename "$f")" && n=$((n + 1)); done
  if [ "$n" -eq "$3" ] && [ "$(ls "$2" | wc -l)" -eq "$3" ]; then ok "$4"; else bad "$4 ($n of $3 identical)"; fi
}
one_error() { # one_error CMD PATTERN DESC: exactly one ctrecon error line, matching
  local n
  n=$(grep -c "^ctrecon $1: error:" "$ERR")
  if [ "$n" -eq 1 ] && grep -q "^ctrecon $1: error: .*$2" "$ERR"; then ok "$3"
  else bad "$3: $n error lines, expected one matching '$2'"; fi
}

echo "# build"
step "ctrecon info says MPI is built" info
grep -q '^distributed runs: mpirun' "$OUT" && ok "info tells how to run distributed" || bad "info: $(cat "$OUT")"

echo "# fdk: 2 and 3 ranks against one process"
NU=48 NV=40 NVIEWS=40 N=32
step "geometry" geometry --out g.json --nu $NU --nv $NV --du 9 --dv 12 --views $NVIEWS \
  --volume $N --voxel 8 --quiet
step "phantom" phantom --geometry g.json --out p.raw --device cpu --quiet
FDK=(fdk --geometry g.json --projections p.raw --device cpu)
step "one process: raw" "${FDK[@]}" --out plain.raw --quiet
step "one process: nrrd" "${FDK[@]}" --out plain.nrrd --quiet
mkdir ref && step "one process: TIFF stack" "${FDK[@]}" --out 'ref/v_%03d.tif' --quiet
step "one process: uint16 nrrd of slices 3..28" "${FDK[@]}" --out plain16.nrrd --quiet \
  --out-dtype uint16 --out-scale 2000 --slices 3:29
for n in 2 3; do
  mpi $n "${FDK[@]}" --out d$n.raw
  [ "$rc" -eq 0 ] && ok "fdk on $n ranks (raw)" || bad "fdk on $n ranks: exit $rc"
  same d$n.raw plain.raw "fdk: $n ranks' raw = one process's"
  for r in $(seq 0 $((n - 1))); do
    grep -q "rank $r of $n (.*): [0-9]* slices" "$ERR" || bad "no line for rank $r of $n"
  done
  [ "$(grep -c "^ctrecon fdk: info: rank .* slices" "$ERR")" -eq $n ] && ok "one line per rank" ||
    bad "rank lines: $(grep rank "$ERR")"
  grep -q "wrote d$n.raw" "$OUT" && [ "$(grep -c '^wrote' "$OUT")" -eq 1 ] &&
    ok "one summary (rank 0 speaks)" || bad "summary: $(cat "$OUT")"
  mpi $n "${FDK[@]}" --out d$n.nrrd --quiet
  same d$n.nrrd plain.nrrd "fdk: $n ranks' nrrd = one process's"
  mkdir t$n && mpi $n "${FDK[@]}" --out "t$n/v_%03d.tif" --quiet
  same_stack ref t$n $N "fdk: $n ranks' TIFF stack = one process's"
  mpi $n "${FDK[@]}" --out d16_$n.nrrd --quiet --out-dtype uint16 --out-scale 2000 --slices 3:29
  same d16_$n.nrrd plain16.nrrd "fdk: $n ranks' uint16 slab = one process's"
done
mpi 3 "${FDK[@]}" --out ds.raw --quiet --max-slab-slices 3 --store scratch --views-per-batch 7
same ds.raw plain.raw "fdk: 3 ranks, small subvolumes in scratch = one process"
clean "fdk runs"

echo "# fbp: 2 and 3 ranks against one process"
step "demo --parallel" demo --parallel --device cpu --size 48 --views 40 --slices 24 --quiet
FBP=(fbp --device cpu --projections demo-parallel-out/projections.tif --flat demo-parallel-out/flat.tif
  --dark demo-parallel-out/dark.tif --batch 3)
step "one process: raw" "${FBP[@]}" --out fplain.raw --quiet
step "one process: nrrd" "${FBP[@]}" --out fplain.nrrd --quiet
mkdir fref && step "one process: TIFF stack" "${FBP[@]}" --out 'fref/s_%03d.tif' --quiet
PAG=(--paganin-delta-beta 100 --energy 20 --distance 100 --pixel-size 0.01 --stripe sorting)
step "one process: Paganin and rings" "${FBP[@]}" --out fpag.raw --quiet "${PAG[@]}"
for n in 2 3; do
  mpi $n "${FBP[@]}" --out f$n.raw
  [ "$rc" -eq 0 ] && ok "fbp on $n ranks (raw)" || bad "fbp on $n ranks: exit $rc"
  same f$n.raw fplain.raw "fbp: $n ranks' raw = one process's"
  grep -q "rotation axis: 23.50" "$OUT" && ok "the axis rank 0 found is printed" || bad "axis: $(cat "$OUT")"
  mpi $n "${FBP[@]}" --out f$n.nrrd --quiet
  same f$n.nrrd fplain.nrrd "fbp: $n ranks' nrrd = one process's"
  mkdir ft$n && mpi $n "${FBP[@]}" --out "ft$n/s_%03d.tif" --quiet
  same_stack fref ft$n 24 "fbp: $n ranks' TIFF stack = one process's"
  mpi $n "${FBP[@]}" --out fpag$n.raw --quiet "${PAG[@]}"
  same fpag$n.raw fpag.raw "fbp: $n ranks with Paganin (neighbour bands) = one process"
done
clean "fbp runs"

echo "# a 3-rank run killed mid-way, resumed with 2 ranks"
CTRECON_INJECT_RANK=1 CTRECON_INJECT_KILL_AFTER_SLABS=1 mpi 3 "${FDK[@]}" --out k.raw
[ "$rc" -ne 0 ] && ok "the killed run exits non-zero ($rc)" || bad "killed run: exit 0"
[ ! -e k.raw ] && [ -f k.raw.partial ] && ok "no final output, the partial output kept" ||
  bad "after the kill: $(ls k.raw*)"
grep -q '^generation 1 ranks 3 ' k.raw.partial.journal && [ -f k.raw.partial.journal.1.1 ] &&
  ok "the master journal and the ranks' journals are kept" || bad "journals: $(ls k.raw*)"
[ "$(cat k.raw.partial.journal.1.* | grep -c '^slab .* done$')" -ge 1 ] &&
  [ "$(cat k.raw.partial.journal.1.1 | grep -c '^slab .* done$')" -eq 1 ] &&
  ok "rank 1 journalled one subvolume before it died" || bad "journals: $(cat k.raw.partial.journal.1.*)"
mpi 2 "${FDK[@]}" --out k.raw --resume
[ "$rc" -eq 0 ] && ok "resumed with 2 ranks" || bad "resume with 2 ranks: exit $rc"
grep -q '^resumed: [1-9][0-9]* of 32 slices' "$OUT" && ok "the resume kept the journalled slices" ||
  bad "resume summary: $(cat "$OUT")"
same k.raw plain.raw "killed with 3 ranks, resumed with 2 = uninterrupted"
clean "fdk kill and resume"
CTRECON_INJECT_RANK=2 CTRECON_INJECT_KILL_AFTER_SLABS=1 mpi 3 "${FBP[@]}" --out fk.raw
[ "$rc" -ne 0 ] && [ ! -e fk.raw ] && [ -f fk.raw.partial.journal ] &&
  ok "fbp: killed with 3 ranks, partial kept ($rc)" || bad "fbp kill: exit $rc, $(ls fk.raw*)"
mpi 2 "${FBP[@]}" --out fk.raw --resume
same fk.raw fplain.raw "fbp: killed with 3 ranks, resumed with 2 = uninterrupted"
clean "fbp kill and resume"

echo "# resume across mpirun and one process"
CTRECON_INJECT_RANK=0 CTRECON_INJECT_STOP_AFTER_SLABS=1 mpi 2 "${FDK[@]}" --out r1.raw
[ "$rc" -ne 0 ] && [ -f r1.raw.partial.journal ] && ok "a 2-rank run stopped" || bad "stop: exit $rc"
has_stop=$(grep -c '^ctrecon fdk: error: rank 0 of 2 .*stopped after 1' "$ERR")
[ "$has_stop" -eq 1 ] && ok "the stop names rank 0 and its cause" || bad "stop message: $(cat "$ERR")"
grep -q -e "--resume" "$ERR" && ok "it advises --resume" || bad "no --resume advice"
step "resumed by one process (no mpirun)" "${FDK[@]}" --out r1.raw --resume --quiet
same r1.raw plain.raw "2 ranks stopped, resumed by one process = uninterrupted"
CTRECON_INJECT_STOP_AFTER_SLABS=2 run "${FDK[@]}" --out r2.raw --max-slab-slices 5 --quiet
[ "$rc" -ne 0 ] && [ -f r2.raw.partial.journal ] && ok "a one-process run stopped" || bad "stop: exit $rc"
mpi 3 "${FDK[@]}" --out r2.raw --resume --quiet
[ "$rc" -eq 0 ] && ok "resumed with 3 ranks" || bad "resume with 3 ranks: exit $rc"
same r2.raw plain.raw "one process stopped, resumed by 3 ranks = uninterrupted"
clean "resume across"

echo "# a slow rank's work is taken over (balance by measured rate)"
CTRECON_INJECT_RANK=1 CTRECON_INJECT_DELAY_MS=700 mpi 2 "${FDK[@]}" --out slow.raw
same slow.raw plain.raw "with rank 1 slowed down = one process"
took=$(sed -n 's/^ctrecon fdk: info: rank 0 of 2 ([^)]*): \([0-9]*\) slices in \([0-9]*\) pieces.*/\1 \2/p' "$ERR")
set -- $took
[ "${1:-0}" -gt 16 ] && [ "${2:-0}" -ge 2 ] && ok "rank 0 took over part of rank 1's half ($1 slices in $2 pieces)" ||
  bad "rank 0: '$took' ($(grep rank "$ERR"))"
CTRECON_INJECT_RANK=0 CTRECON_INJECT_DELAY_MS=700 mpi 3 "${FBP[@]}" --out fslow.raw
same fslow.raw fplain.raw "fbp with rank 0 slowed down = one process"
clean "balancing"

# resumable NAME OUT: after a failed run, either nothing is left behind or
# (when ranks finished subvolumes before the failure reached them, as on a
# fast machine) exactly the resumable set: OUT.partial with its journals, and
# the message says --resume. Then removed.
resumable() {
  local left
  left=$(find . -name '*.partial*' -o -name '*.scratch.*' -o -name '*.tmp.*' | sort)
  if [ -z "$left" ]; then
    ok "$1: nothing left behind"
  elif ! grep -qvE "^\./$2\.partial(\.journal(\.[0-9]+\.[0-9]+)?)?$" <<< "$left" &&
       grep -q "^\./$2\.partial\.journal$" <<< "$left" && grep -q -e '--resume' "$ERR"; then
    ok "$1: only the resumable partial output and its journals are left, and --resume is named"
    rm -f "$2".partial*
  else
    bad "$1: left behind: $left"
  fi
}

# rank2_reads OUT FILE: fdk on 3 ranks, ranks 0 and 1 reading p.raw, rank 2 FILE (its own copy);
# each rank's status in rc.R.
rank2_reads() {
  rm -f rc.*
  OMPI_MCA_orte_abort_on_non_zero_status=0 \
  "$MPIRUN" --oversubscribe -np 2 bash rankrc.sh "$CTR" fdk --geometry g.json --projections p.raw \
    --device cpu --out "$1" --threads 1 : -np 1 bash rankrc.sh "$CTR" fdk --geometry g.json \
    --projections "$2" --device cpu --out "$1" --threads 1 >"$OUT" 2>"$ERR"
  rc=$?
}

echo "# faults: a bad input seen by one rank only"
# a NaN in detector row 38 of view 0: rows 17..39 are rank 1's (rank 0, slowed, takes none)
cp p.raw bad.raw && printf '\x00\x00\xc0\x7f' | dd of=bad.raw conv=notrunc bs=1 seek=$(((38 * NU + 20) * 4)) 2>/dev/null
CTRECON_INJECT_RANK=0 CTRECON_INJECT_DELAY_MS=500 mpi_rc 2 fdk --geometry g.json --projections bad.raw \
  --device cpu --out bad.out.raw --strict
[ -f rc.0 ] && [ -f rc.1 ] && [ "$(cat rc.0)" -ne 0 ] && [ "$(cat rc.1)" -ne 0 ] &&
  ok "every rank exits non-zero ($(cat rc.0), $(cat rc.1))" || bad "ranks' exits: $(cat rc.* 2>/dev/null)"
one_error fdk "rank 1 of 2 (.*): 'bad.raw': 1 values NaN" "one message naming rank 1 and the bad value"
[ ! -e bad.out.raw ] && ok "no final file" || bad "bad.out.raw exists"
resumable "bad input" bad.out.raw
rank2_reads m.raw missing.raw
[ "$(cat rc.0 2>/dev/null)" -ne 0 ] && [ "$(cat rc.1 2>/dev/null)" -ne 0 ] &&
  [ "$(cat rc.2 2>/dev/null)" -ne 0 ] && ok "a file missing on rank 2: every rank exits non-zero" ||
  bad "missing file: ranks' exits: $(cat rc.* 2>/dev/null | tr '\n' ' ')"
one_error fdk "rank 2 of 3 (.*): --projections: cannot open 'missing.raw'" "one message naming rank 2 and the file"
[ ! -e m.raw ] && ok "no final file" || bad "m.raw exists"
resumable "missing file" m.raw

echo "# faults: node-local copies of the input that differ (same size)"
# Each rank reads its own copy: an equal copy runs (the output is one process's); one whose
# data differ (one value in the first rows of view 0) made a mixed volume with exit 0; the
# ranks agree on a fingerprint of what they read now: every rank stops, one message naming
# the rank and its file.
cp p.raw same.raw
cp p.raw other.raw && printf '\x00\x00\x80\x3f' | dd of=other.raw conv=notrunc bs=1 seek=$(((3 * NU + 20) * 4)) 2>/dev/null
rank2_reads c_same.raw same.raw
same c_same.raw plain.raw "an equal node-local copy on rank 2: the output is one process's"
rank2_reads c_other.raw other.raw
[ "$(cat rc.0 2>/dev/null)" -ne 0 ] && [ "$(cat rc.1 2>/dev/null)" -ne 0 ] &&
  [ "$(cat rc.2 2>/dev/null)" -ne 0 ] && ok "a differing copy on rank 2: every rank exits non-zero" ||
  bad "differing copy: ranks' exits: $(cat rc.* 2>/dev/null | tr '\n' ' ')"
one_error fdk "rank 2 of 3 (.*): the input 'other.raw' it reads differs from rank 0's" \
  "one message naming rank 2 and its copy"
[ ! -e c_other.raw ] && ok "no final file from differing copies" || bad "c_other.raw exists"
rm -f c_other.raw.partial*
echo "# faults: an output folder missing on one rank's node (issue 41)"
# rank 1 runs in node1/, which lacks the folder of the relative --out: the
# job ends as that rank exits, so that rank names itself, its host and the path
mkdir -p node0/out node1
for cmd in fdk fbp; do
  if [ $cmd = fdk ]; then args=(fdk --geometry "$PWD/g.json" --projections "$PWD/p.raw")
  else args=(fbp --projections "$PWD/demo-parallel-out/projections.tif"); fi
  "$MPIRUN" --oversubscribe -np 1 -wdir "$PWD/node0" "$CTR" "${args[@]}" --device cpu \
    --out out/n.raw --threads 1 : -np 1 -wdir "$PWD/node1" "$CTR" "${args[@]}" --device cpu \
    --out out/n.raw --threads 1 >"$OUT" 2>"$ERR"
  rc=$?
  [ "$rc" -ne 0 ] && ok "$cmd: the job exits non-zero ($rc)" || bad "$cmd: exit 0 without rank 1's folder"
  one_error $cmd "rank 1 of 2 ($(hostname)): cannot write --out 'out/n.raw': directory 'out': No such file" \
    "$cmd: one message naming rank 1, its host and the path"
  [ ! -e node0/out/n.raw ] && ok "$cmd: no final file" || bad "$cmd: node0/out/n.raw exists"
done

echo "# faults: a hung rank (the --rank-timeout)"
CTRECON_INJECT_RANK=1 CTRECON_INJECT_HANG=1 mpi 3 "${FDK[@]}" --out h.raw --rank-timeout 2
[ "$rc" -ne 0 ] && ok "the run with a hung rank ends non-zero ($rc)" || bad "hung rank: exit 0"
one_error fdk "rank 1 of 3 (.*): made no progress for 2 s" "one message naming the hung rank"
grep -q -e '--rank-timeout' "$ERR" && ok "it names --rank-timeout" || bad "no --rank-timeout in: $(cat "$ERR")"
[ ! -e h.raw ] && ok "no final file" || bad "h.raw exists"

echo "# commands that do not distribute"
mpi 2 geometry --out x.json
[ "$rc" -ne 0 ] && grep -q "runs in one process: start it without mpirun" "$ERR" &&
  [ "$(grep -c 'error:' "$ERR")" -eq 1 ] && ok "geometry refuses several ranks, once" ||
  bad "geometry on 2 ranks: exit $rc: $(cat "$ERR")"
for o in v.h5 v.tif; do
  mpi 2 "${FDK[@]}" --out $o
  [ "$rc" -eq 4 ] && grep -q "'$o' (.*): a distributed run writes raw, nrrd or a TIFF stack pattern" "$ERR" &&
    grep -q "write one of those and convert afterwards" "$ERR" && [ ! -e $o ] &&
    ok "fdk --out $o (written in order by one process) is refused, the fallback named" ||
    bad "fdk --out $o under mpirun: exit $rc: $(cat "$ERR")"
  mpi 2 "${FBP[@]}" --out $o
  [ "$rc" -eq 4 ] && grep -q "'$o' (.*): a distributed run writes raw, nrrd or a TIFF stack pattern" "$ERR" &&
    [ ! -e $o ] && ok "fbp --out $o is refused" || bad "fbp --out $o under mpirun: exit $rc: $(cat "$ERR")"
done
mpi 2 "${FDK[@]}" --out pv.raw --preview pv
[ "$rc" -eq 2 ] && grep -q -e "--preview needs the whole volume" "$ERR" && ok "--preview is refused under mpirun" ||
  bad "--preview under mpirun: exit $rc"

finish
