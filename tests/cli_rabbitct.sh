#!/usr/bin/env bash
# `ctrecon rabbitct-make` and `ctrecon rabbitct`: a tiny RabbitCT file, the
# runner with the built module (CPU, exact) scored against the double
# reference, the call protocol (a checking module compiled here when a C
# compiler is present), and the errors. Usage: bash cli_rabbitct.sh path/to/ctrecon
set -u
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 < b + 0) }'; }
# field NAME: the first number after NAME at the start of a report line
field() { awk -v l="$1" 'index($0, l) == 1 { s = substr($0, length(l) + 1); split(s, f, " "); print f[1]; exit }' "$OUT"; }
one_error() { # one_error CODE NEEDLE DESC: exit CODE, one stderr line containing NEEDLE
  local lines; lines=$(wc -l <"$ERR")
  if [ "$rc" -eq "$1" ] && [ "$lines" -eq 1 ] && grep -qF -- "$2" "$ERR" &&
     grep -q '^ctrecon rabbitct[-a-z]*: error: ' "$ERR"; then
    ok "$3 (exit $rc: $(cat "$ERR"))"
  else
    bad "$3: exit $rc, $lines stderr line(s), expected exit $1 and one line with '$2'"
  fi
}

echo "# help"
for cmd in rabbitct-make rabbitct; do
  run "$cmd" --help
  if [ "$rc" -eq 0 ] && grep -q "^usage: ctrecon $cmd" "$OUT" && [ ! -s "$ERR" ]; then
    ok "$cmd --help: usage on stdout, exit 0"
  else
    bad "$cmd --help"
  fi
  # Every option with a value states its default or that it is required.
  missing=$(awk '/^options:/ { o = 1; next } /^examples:/ { o = 0 } o && /^  --[a-z-]+ [A-Z0-9|a-z]/ && !/default|required/ { print $1 }' "$OUT" | grep -v -- --help)
  [ -z "$missing" ] && ok "$cmd: every option states its default" || bad "$cmd: no default for: $missing"
  run help "$cmd"
  [ "$rc" -eq 0 ] && grep -q "^usage: ctrecon $cmd" "$OUT" && ok "help $cmd" || bad "help $cmd"
done
run --help
grep -q '^  rabbitct-make ' "$OUT" && grep -q '^  rabbitct ' "$OUT" && ok "global help lists both" ||
  bad "global help lacks the rabbitct commands"

echo "# rabbitct-make, tiny"
run rabbitct-make --views 40 --width 64 --height 48 --angle-range 220 --sizes 16,32 --out r.rct --device cpu
if [ "$rc" -eq 0 ] && [ ! -s "$ERR" ]; then ok "rabbitct-make exits 0, nothing on stderr"; else bad "rabbitct-make: exit $rc"; fi
sed 's/^/    | /' "$OUT"
# 24 header bytes + 40 x (96 + 64 x 48 x 4) + 2 x (16^3 + 32^3)
size=$(wc -c <r.rct 2>/dev/null || echo 0)
[ "$size" -eq 569112 ] && ok "r.rct holds 569112 bytes (header, 40 views, 16^3 and 32^3 references)" ||
  bad "r.rct size $size, expected 569112"
hdr=$(od -An -tu4 -N16 r.rct | tr -s ' ')
[ "$hdr" = " 103 64 48 40" ] && ok "header: version 103, 64 x 48, 40 views" || bad "header '$hdr'"
grep -q '^reference   32^3' "$OUT" && grep -q '^wrote r.rct: 40 views of 64 x 48, 220 deg, references 16, 32' "$OUT" &&
  ok "summary: reference times, views, detector, range, sizes" || bad "summary"
"$CTR" rabbitct-make --views 40 --width 64 --height 48 --angle-range 220 --sizes 16 --out same.rct --quiet --device cpu >/dev/null 2>&1
"$CTR" rabbitct-make --views 40 --width 64 --height 48 --angle-range 220 --sizes 16 --out seed2.rct --seed 2 --quiet --device cpu >/dev/null 2>&1
"$CTR" rabbitct-make --views 40 --width 64 --height 48 --angle-range 220 --sizes 16 --out same2.rct --quiet --device cpu >/dev/null 2>&1
cmp -s same.rct same2.rct && ok "same seed: identical files" || bad "same seed gives different files"
[ -s seed2.rct ] && ! cmp -s same.rct seed2.rct && ok "--seed 2: a different orbit" || bad "--seed 2"

echo "# rabbitct with the built module (CPU, exact)"
run rabbitct r.rct --size 32 --device cpu --json r32.json
if [ "$rc" -ne 0 ]; then
  bad "rabbitct r.rct --size 32 --device cpu: exit $rc (is modules/rabbitct built?)"
else
  ok "rabbitct r.rct --size 32 --device cpu exits 0"
  sed 's/^/    | /' "$OUT"
  rmse=$(field "RMSE")
  below "$rmse" 0.5 && ok "RMSE $rmse HU < 0.5 against the double reference" || bad "RMSE '$rmse'"
  grep -Eq '^backprojection +[0-9.]+ s \(sum of 40 calls\), [0-9.]+ ms per view, [0-9.e+-]+ GUPS' "$OUT" &&
    ok "backprojection time, per view, GUPS" || bad "backprojection line"
  for l in module device load finish MSE "max error" PSNR; do
    grep -q "^$l " "$OUT" && ok "report has '$l'" || bad "report lacks '$l'"
  done
  grep -q '^device  *cpu (CTRECON_DEVICE), interp exact: the CPU' "$OUT" &&
    ok "device: cpu, and the CPU's interpolation (not the GPU's precise)" || bad "device line"
  grep -q '"interp": "exact"' r32.json && grep -q '"protocol": "published"' r32.json &&
    grep -q '"buffers_owner": "module"' r32.json && grep -q '"subset_seconds": \[' r32.json &&
    ok "--json: interp, protocol, buffer owner, per-subset times" || bad "--json protocol fields"
  run rabbitct r.rct --size 32 --device cpu --projection-buffers runner
  [ "$rc" -eq 0 ] && grep -q "^buffers  *4 subsets of up to 10 views, in the runner's buffers" "$OUT" &&
    below "$(field "RMSE")" 0.5 && ok "--projection-buffers runner: the runner's buffers, same accuracy" ||
    bad "--projection-buffers runner: exit $rc"
  grep -q '"name": "rabbitct/L32"' r32.json && grep -q '"gpu": null' r32.json &&
    grep -q '"rmse_hu": [0-9]' r32.json && grep -q '"views": 40' r32.json &&
    grep -q '"command": "ctrecon rabbitct r.rct --size 32' r32.json &&
    ok "--json: benchmark layout" || bad "--json: $(cat r32.json 2>/dev/null)"
  if command -v python3 >/dev/null; then
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' r32.json && ok "--json parses" || bad "--json does not parse"
  fi

  echo "# tuning switches for the module (docs/tuning.md)"
  run rabbitct r.rct --size 32 --device cpu --tune bp_chunks=3,5 --tune direct_io=off
  [ "$rc" -eq 0 ] && below "$(field "RMSE")" 0.5 && ok "--tune: the module runs with its switches set" ||
    bad "--tune bp_chunks=3,5: exit $rc"
  CTRECON_BP_REGS=65 run rabbitct r.rct --size 32 --device cpu
  [ "$rc" -ne 0 ] && grep -q "CTRECON_BP_REGS: .*bp_regs is 65" "$ERR" &&
    ok "a bad CTRECON_<KEY> stops the module, named (exit $rc)" || bad "CTRECON_BP_REGS=65: exit $rc"
  run rabbitct r.rct --size 32 --device cpu --tune bp_regs=65
  [ "$rc" -eq 2 ] && grep -q "bp_regs is 65" "$ERR" && ! grep -q "ctr_tuning" "$ERR" && ok "a bad --tune is a usage error" ||
    bad "--tune bp_regs=65: exit $rc"

  echo "# no reference of the size"
  run rabbitct r.rct --size 64 --device cpu
  [ "$rc" -eq 0 ] && grep -q "scoring skipped: 'r.rct' has no 64^3 reference volume (sizes present: 16, 32)" "$OUT" &&
    ! grep -q '^RMSE' "$OUT" && ok "--size 64: scoring skipped, exit 0" || bad "--size 64: exit $rc"
fi

echo "# the call protocol, with a checking module"
CC=${CC:-cc}
if command -v "$CC" >/dev/null 2>&1; then
  cat >check.c <<'EOF'
#include "rabbitct.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
/* Fails on any deviation from the published runner's protocol (RabbitCT
 * 1.0.3): Prepare before Load with all matrices and no buffers, N/4 buffers
 * announced (CHECK_ANNOUNCED); per subset of NBUF views (CHECK_NBUF) one call per view, the
 * flag 1 on the subset's first call only, the absolute view number, I_n the
 * subset's i-th buffer: the module's own (CHECK_PROVIDE=1) or the runner's.
 * Backprojects like RabbitCT's reference (bilinear, zero outside, 1/w^2) in
 * double per voxel. */
static unsigned next, loaded, prepared, nbuf;
static float *own[40], **mine;
bool RCTPrepareAlgorithm(RabbitCtGlobalData *r) {
  const char *announced = getenv("CHECK_ANNOUNCED"); /* buffers announced: N/4 = 10 */
  prepared = 1;
  return !loaded && r->f_L == NULL && r->adv_pProjBuffers == NULL &&
         r->adv_numProjBuffers == (unsigned)(announced ? atoi(announced) : 10) &&
         r->adv_ppProjMatrixBuffers != NULL && r->adv_ppProjMatrixBuffers[39] != NULL;
}
bool RCTLoadAlgorithm(RabbitCtGlobalData *r) {
  loaded = 1;
  nbuf = (unsigned)atoi(getenv("CHECK_NBUF"));
  if (getenv("CHECK_PROVIDE")) {
    for (unsigned k = 0; k < r->adv_numProjBuffers; k++) own[k] = calloc(64 * 48, sizeof(float));
    mine = r->adv_pProjBuffers = own;
  }
  return prepared && r->L == 32 && r->S_x == 64 && r->S_y == 48 && r->adv_N == 40 &&
         r->R_L == 8.0f && r->O_L == -124.0f && r->adv_ppProjMatrixBuffers != NULL &&
         r->f_L == NULL && nbuf > 0;
}
bool RCTAlgorithmBackprojection(RabbitCtGlobalData *r) {
  const unsigned n = r->adv_projNumber, i = n % nbuf, L = r->L;
  const unsigned avail = n / nbuf * nbuf + nbuf <= 40 ? nbuf : 40 % nbuf;
  if (n != next++ || r->adv_firstProjOfSubset != (i == 0) || r->adv_numAvailProjs != avail ||
      r->I_n != r->adv_pProjBuffers[i] || r->A_n != r->adv_ppProjMatrixBuffers[n] || !r->f_L ||
      (mine && r->adv_pProjBuffers != mine))
    return false;
  const double *A = r->A_n;
  for (unsigned k = 0; k < L; k++)
    for (unsigned j = 0; j < L; j++)
      for (unsigned i = 0; i < L; i++) {
        const double x = r->O_L + i * (double)r->R_L, y = r->O_L + j * (double)r->R_L,
                     z = r->O_L + k * (double)r->R_L;
        const double w = A[2] * x + A[5] * y + A[8] * z + A[11];
        const double u = (A[0] * x + A[3] * y + A[6] * z + A[9]) / w,
                     v = (A[1] * x + A[4] * y + A[7] * z + A[10]) / w;
        const int iu = (int)floor(u), iv = (int)floor(v);
        double s = 0.0;
        for (int b = 0; b < 2; b++)
          for (int a = 0; a < 2; a++)
            if (iu + a >= 0 && iv + b >= 0 && iu + a < (int)r->S_x && iv + b < (int)r->S_y)
              s += (a ? u - iu : 1 - (u - iu)) * (b ? v - iv : 1 - (v - iv)) *
                   r->I_n[(iv + b) * r->S_x + iu + a];
        r->f_L[(k * L + j) * L + i] += (float)(s / (w * w));
      }
  return true;
}
bool RCTFinishAlgorithm(RabbitCtGlobalData *r) { return next == 40; }
bool RCTUnloadAlgorithm(RabbitCtGlobalData *r) { return loaded; }
EOF
  if "$CC" -O2 -shared -fPIC -I"$SRC/modules/rabbitct" check.c -o libcheck.so -lm 2>"$ERR"; then
    export CHECK_NBUF=10
    run rabbitct r.rct --size 32 --module libcheck.so
    if [ "$rc" -eq 0 ] && grep -q '^prepare  *[0-9]' "$OUT" && [ "$(field "max error")" = 0 ] &&
       grep -q "^protocol  *the published runner's" "$OUT" &&
       grep -q "^buffers  *4 subsets of up to 10 views, in the runner's buffers" "$OUT"; then
      ok "published protocol: Prepare, Load, the runner's N/4 = 10 buffers after Load, the flag on each subset's first call only, Finish, Unload; max error 0 HU"
    else
      bad "published protocol, the runner's buffers: exit $rc"
    fi
    export CHECK_PROVIDE=1
    run rabbitct r.rct --size 32 --module libcheck.so
    if [ "$rc" -eq 0 ] && [ "$(field "max error")" = 0 ] &&
       grep -q "^buffers  *4 subsets of up to 10 views, in the module's buffers" "$OUT"; then
      ok "published protocol: the module's own buffers from Load are used"
    else
      bad "published protocol, the module's buffers: exit $rc"
    fi
    unset CHECK_PROVIDE
    export CHECK_NBUF=40
    run rabbitct r.rct --size 32 --module libcheck.so --prefetch-all-projections
    [ "$rc" -eq 0 ] && grep -q "^buffers  *1 subsets of up to 40 views" "$OUT" &&
      ok "--prefetch-all-projections: one subset of all 40 views" || bad "--prefetch-all-projections: exit $rc"
    export CHECK_NBUF=7
    export CHECK_ANNOUNCED=7
    run rabbitct r.rct --size 32 --module libcheck.so --buffers 7 --json b7.json
    unset CHECK_ANNOUNCED
    [ "$rc" -eq 0 ] && grep -q "^protocol  *NOT the benchmark: --buffers 7 (the published runner uses 10)" "$OUT" &&
      grep -q '"protocol": "non-standard"' b7.json &&
      ok "--buffers 7: subsets of 7, reported as not the benchmark" || bad "--buffers 7: exit $rc"
    run rabbitct r.rct --size 32 --module ./libcheck.so
    one_error 1 "RCTAlgorithmBackprojection returned false for view 0 (module './libcheck.so'" \
      "a module that expects other subsets returns false: exit 1, names the view"
    unset CHECK_NBUF
    run rabbitct r.rct --size 32 --buffers 7 --prefetch-all-projections
    one_error 2 "--prefetch-all-projections and --buffers" "--buffers with --prefetch-all-projections: usage error"
  else
    bad "cannot compile the checking module with $CC"
  fi
else
  echo "skip - no C compiler: protocol module not built"
fi

echo "# errors"
run rabbitct r.rct --size 32 --module "$TOP/no/such/librabbitct.so"
one_error 1 "$TOP/no/such/librabbitct.so" "missing module: exit 1, names the path"
libm=
for f in /lib/x86_64-linux-gnu/libm.so.6 /usr/lib/x86_64-linux-gnu/libm.so.6 /lib64/libm.so.6 /usr/lib64/libm.so.6 /lib/aarch64-linux-gnu/libm.so.6; do
  [ -f "$f" ] && libm=$f && break
done
if [ -n "$libm" ]; then
  run rabbitct r.rct --size 32 --module "$libm"
  one_error 3 "module '$libm' does not export RCTLoadAlgorithm" "module without the entry points: exit 3"
fi
head -c 300000 r.rct >trunc.rct
run rabbitct trunc.rct --size 32 --device cpu
one_error 3 "trunc.rct" "truncated file: exit 3, names the file"
cp r.rct keep.rct
run rabbitct keep.rct --size 32 --device cpu --json keep.rct
if [ "$rc" -eq 2 ] && grep -q -- "--json" "$ERR" && cmp -s r.rct keep.rct; then
  ok "--json equal to the input: refused (exit 2), the input untouched ($(cat "$ERR"))"
else
  bad "--json equal to the input: exit $rc, input changed: $(cmp -s r.rct keep.rct && echo no || echo yes)"
fi
rm -f keep.rct
run rabbitct missing.rct --size 32
one_error 1 "missing.rct" "missing file: exit 1, names the file"
run rabbitct --size 32
one_error 2 "missing the RabbitCT file" "no FILE: usage error"
run rabbitct r.rct --size 0
one_error 2 "--size '0'" "--size 0: usage error"
run rabbitct r.rct other.rct
one_error 2 "unexpected argument 'other.rct'" "two files: usage error"
run rabbitct r.rct --device gpu0
one_error 2 "--device 'gpu0'" "bad --device: usage error"
run rabbitct-make --views 40 --width 64 --height 48 --sizes 16,48 --out bad.rct
one_error 2 "--sizes '16,48'" "--sizes 16,48: usage error"
run rabbitct-make --views 40
one_error 2 "missing required option --out" "rabbitct-make without --out: usage error"
run rabbitct-make --views 40 --width 64 --height 48 --sizes 16 --out nodir/x.rct --device cpu
one_error 1 "nodir" "unwritable --out: exit 1"
run rabbitct-make --views 40 --width 64 --height 48 --angle-range 120 --sizes 16 --out short.rct --device cpu
one_error 2 "a short scan needs at least 180 deg" "--angle-range 120 (less than 180 deg): usage error"
[ ! -e bad.rct ] && [ ! -e nodir ] && [ ! -e short.rct ] && ok "failed runs leave no file" || bad "files left by failed runs"
leftover=$(find . -name '*.tmp.*' -o -name '*partial*')
[ -z "$leftover" ] && ok "no temporaries" || bad "temporaries: $leftover"

finish
