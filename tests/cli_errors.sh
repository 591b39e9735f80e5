#!/usr/bin/env bash
# Bad input: each case must exit with its documented code, print exactly one
# "ctrecon <cmd>: error: ..." line naming the file or field and what was
# expected, and leave no output (nor temporary) behind.
# Usage: bash cli_errors.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"
listing() { find . | LC_ALL=C sort; }
# fails CODE DESC "NEEDLE1|NEEDLE2..." ARGS...: exit CODE, one error line with
# every needle, and the directory tree unchanged.
fails() {
  local want=$1 desc=$2 needles=$3; shift 3
  local before after cmd=$1 n lines
  before=$(listing)
  run "$@"
  after=$(listing)
  lines=$(wc -l <"$ERR")
  local why=""
  [ "$rc" -eq "$want" ] || why="$why exit $rc (expected $want);"
  [ "$lines" -eq 1 ] || why="$why $lines stderr lines;"
  grep -q "^ctrecon $cmd[a-z ]*: error: " "$ERR" || why="$why no 'ctrecon $cmd: error:' prefix;"
  IFS='|' read -ra n <<<"$needles"
  for needle in "${n[@]}"; do grep -qF -- "$needle" "$ERR" || why="$why no '$needle';"; done
  [ "$before" = "$after" ] || why="$why files changed: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | tr '\n' ' ');"
  if [ -z "$why" ]; then ok "$desc (exit $rc): $(cat "$ERR")"; else bad "$desc:$why"; fi
}

NU=48 NV=40 NVIEWS=30
GEO="--nu $NU --nv $NV --du 9 --dv 12 --volume 32 --voxel 8 --quiet"
"$CTR" geometry --out g.json $GEO --views $NVIEWS || exit 1
"$CTR" geometry --out g29.json $GEO --views 29 || exit 1
"$CTR" phantom --geometry g.json --out p.raw --quiet || exit 1
"$CTR" phantom --geometry g.json --out p.nrrd --quiet || exit 1
"$CTR" phantom --geometry g29.json --out p29.tif --quiet || exit 1
mkdir views
"$CTR" phantom --geometry g.json --out 'views/p_%03d.tif' --quiet || exit 1
rm views/p_029.tif
FDK="fdk --geometry g.json --out r.nrrd"

echo "# wrong sizes (exit 3)"
head -c 100000 p.raw >short.raw
fails 3 "raw file too short" "short.raw|100000 bytes|expected 230400|48 x 40 x 30 float32" $FDK --projections short.raw
cat p.raw p.raw >long.raw
fails 3 "raw file too long" "long.raw|460800 bytes|expected 230400" $FDK --projections long.raw
fails 3 "raw float32 read as uint16" "p.raw|expected 115200|uint16" $FDK --projections p.raw --raw-dtype uint16
fails 3 "raw offset past the data" "p.raw|expected 230416" $FDK --projections p.raw --raw-offset 16
fails 3 "tiff stack with 29 of 30 views" "views/p_%03d.tif|29 images|expected 30 views|g.json" $FDK --projections 'views/p_%03d.tif'
fails 3 "multi-page tiff of 29 views" "p29.tif|29 images|expected 30 views" $FDK --projections p29.tif
fails 3 "nrrd of another geometry" "p.nrrd|30 images|expected 29 views|g29.json" fdk --geometry g29.json --projections p.nrrd --out r.nrrd

echo "# flag typos name the nearest flag, as JSON key typos do (exit 2, issue 41)"
fails 2 "fdk --windw" "unknown option '--windw'; did you mean '--window'?" $FDK --projections p.raw --windw hann
fails 2 "iterate --iteratons" "unknown option '--iteratons'; did you mean '--iterations'?" iterate --iteratons 3
fails 2 "fbp --angle-rnage=180" "unknown option '--angle-rnage'; did you mean '--angle-range'?" fbp --angle-rnage=180

echo "# real options beyond what float arithmetic holds are refused up front (exit 2, issue 41)"
fails 2 "iterate --tv-weight 1e39" "--tv-weight '1e39'|1e-30 .. 1e+30" \
  iterate --geometry g.json --projections p.raw --out r.nrrd --algorithm fista-tv --tv-weight 1e39
fails 2 "iterate --tv-weight 1e-40" "--tv-weight '1e-40'|1e-30 .. 1e+30" \
  iterate --geometry g.json --projections p.raw --out r.nrrd --algorithm fista-tv --tv-weight 1e-40
fails 2 "fdk --input-scale 1e39" "--input-scale '1e39'|1e-30 .. 1e+30" $FDK --projections p.raw --input-scale 1e39
fails 2 "phantom --uint16-scale 1e31" "--uint16-scale '1e31'|1e-30 .. 1e+30" \
  phantom --geometry g.json --out q.raw --dtype uint16 --uint16-scale 1e31

echo "# truncated and malformed files (exit 3)"
head -c 50000 p.nrrd >trunc.nrrd
fails 3 "truncated nrrd" "trunc.nrrd|50000" $FDK --projections trunc.nrrd
head -c 60000 p29.tif >trunc.tif
fails 3 "truncated tiff" "trunc.tif" fdk --geometry g29.json --projections trunc.tif --out r.nrrd
echo "not an image" >junk.tif
fails 3 "not a tiff" "junk.tif" $FDK --projections junk.tif
head -c 100 g.json >cut.json
fails 3 "truncated geometry JSON" "cut.json|JSON" $FDK --projections p.raw --geometry cut.json
echo '{"ellipsoids": [{"density": 1}]}' >bad_phantom.json
fails 3 "phantom JSON missing a field" "bad_phantom.json|center_mm" phantom --geometry g.json --phantom bad_phantom.json --out q.raw

echo "# bad geometry (exit 3)"
sed 's/"sid":[^,]*,/"sid": 1e999,/' g.json >inf.json
grep -q 1e999 inf.json || echo "warning: could not make inf.json"
fails 3 "infinite sid (1e999)" "inf.json|sid|finite" $FDK --projections p.raw --geometry inf.json
sed 's/"du":[^,]*,/"du": -1e999,/' g.json >inf2.json
fails 3 "infinite pixel pitch" "inf2.json|detector.du|finite" phantom --geometry inf2.json --out q.raw
sed 's/"sid":[^,]*,/"sid": 100,/' g.json >inside.json
fails 3 "source inside the volume (file)" "inside.json|inside the volume|sid" phantom --geometry inside.json --out q.raw
fails 3 "source inside the volume (options)" "inside the volume" geometry --out bad.json --sid 100 --volume 32 --voxel 8
sed 's/"size":[^]]*]/"size": [32, 0, 32]/' g.json >zero.json
fails 3 "volume size 0" "zero.json|volume.size = [32, 0, 32]" $FDK --projections p.raw --geometry zero.json

echo "# usage errors (exit 2)"
fails 2 "unknown dtype" "--dtype 'int8'|float32, uint16 or float16" phantom --geometry g.json --out q.raw --dtype int8
fails 2 "unknown raw dtype" "--raw-dtype 'double'|float32, uint16 or float16" $FDK --projections p.raw --raw-dtype double
fails 2 "unknown filter" "--window 'gauss'|ram-lak|hann" $FDK --projections p.raw --window gauss
fails 2 "unknown format" "--format 'hdf'|raw, tiff" $FDK --projections p.raw --format hdf
fails 2 "unknown output extension" "--out 'r.xyz'|extension" fdk --geometry g.json --projections p.raw --out r.xyz
fails 2 "tiff-stack without a pattern" "--out 'q.tif'|%d" phantom --geometry g.json --out q.tif --format tiff-stack
fails 2 "slices beyond the volume" "--slices 20:40|32|g.json" $FDK --projections p.raw --slices 20:40

echo "# tuning switches (docs/tuning.md): --tune exit 2, CTRECON_<KEY> exit 3"
fails 2 "unknown tuning key" "--tune 'bp_slice=8'|unknown tuning key 'bp_slice'|bp_slices" \
  $FDK --projections p.raw --tune bp_slice=8
fails 2 "tuning value out of range" "--tune 'bp_slices=3'|bp_slices is 3" \
  $FDK --projections p.raw --tune bp_slices=3
fails 2 "tuning switch without a value" "--tune 'tune'|KEY=VALUE" $FDK --projections p.raw --tune tune
CTRECON_PET_Z=7 fails 3 "bad tuning variable" "environment variable CTRECON_PET_Z|pet_z is 7" \
  $FDK --projections p.raw
run $FDK --projections p.raw --out plain.nrrd --quiet
run $FDK --projections p.raw --out tuned.nrrd --quiet --tune direct_io=off --tune tune=off \
  --tune bp_slices=4 --tune bp_block=16x8
[ "$rc" -eq 0 ] && cmp -s plain.nrrd tuned.nrrd && ok "switches that do not apply on the CPU change nothing" ||
  bad "a run with tuning switches: exit $rc, or other bytes"
rm -f plain.nrrd tuned.nrrd

echo "# unwritable outputs and missing inputs (exit 1)"
fails 1 "output under a missing directory" "nodir/r.nrrd|nodir" fdk --geometry g.json --projections p.raw --out nodir/r.nrrd
fails 1 "output whose parent is a file" "p.raw/r.nrrd|not a directory" fdk --geometry g.json --projections p.raw --out p.raw/r.nrrd
fails 1 "phantom output under a missing directory" "nodir/q.raw" phantom --geometry g.json --out nodir/q.raw
fails 1 "truth under a missing directory" "nodir/t.nrrd" phantom --geometry g.json --out q.raw --truth nodir/t.nrrd
fails 1 "preview under a file" "p.raw/prev" $FDK --projections p.raw --preview p.raw/prev
fails 1 "geometry output under a file" "g.json/x.json|not a directory" geometry --out g.json/x.json
fails 1 "missing geometry file" "missing.json|No such file" $FDK --projections p.raw --geometry missing.json
fails 1 "missing projections" "missing.raw" $FDK --projections missing.raw
fails 1 "missing tiff" "missing.tif" $FDK --projections missing.tif
fails 1 "missing phantom file" "missing_phantom.json" phantom --geometry g.json --phantom missing_phantom.json --out q.raw
fails 1 "geometry --check of a missing file" "missing.json" geometry --check missing.json

echo "# unsupported (exit 4)"
if "$CTR" info | grep -Eq '^  cuda +no$'; then
  fails 4 "--device cuda without CUDA" "CUDA|--device cpu" $FDK --projections p.raw --device cuda
  fails 4 "--device cuda:1 without CUDA" "CUDA" phantom --geometry g.json --out q.raw --device cuda:1
elif [ "$("$CTR" info | grep -c '^  cuda:')" -eq 0 ]; then
  fails 4 "--device cuda without a GPU" "GPU" $FDK --projections p.raw --device cuda
else
  fails 4 "--device cuda:99 (no such GPU)" "GPU 99" $FDK --projections p.raw --device cuda:99
fi

echo "# hostile values, strict JSON, impossible geometry, NRRD length, ignored options (issue 17)"
# put FILE OFFSET HEXBYTES: overwrite bytes in place (little-endian float32 patterns).
put() { printf "$(echo "$3" | sed 's/\(..\)/\\x\1/g')" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null; }
NAN=0000c07f INF=0000807f HUGE=6666667f # NaN, +Inf, 0.9 FLT_MAX (finite: overflows the filter)
cp p.raw vals.raw
put vals.raw 400 $NAN; put vals.raw 40000 $INF; put vals.raw 80000 $HUGE
# (strict stops at the first batch holding one: on several GPUs that batch
# may hold fewer than the file's 3, so the count is not part of the check)
fails 3 "fdk --strict: NaN, Inf, near-FLT_MAX projections" "'vals.raw': |values NaN, infinite or beyond|strict" \
  $FDK --projections vals.raw --strict
run $FDK --projections vals.raw --out-dtype uint16
if [ "$rc" -eq 0 ] && [ "$(grep -c warning "$ERR")" -eq 1 ] &&
   grep -q "^ctrecon fdk: warning: 'vals.raw': 3 values NaN, infinite or beyond +-1e+24, replaced by 0" "$ERR" &&
   grep -Eq '^values -?[0-9.e+-]+ \.\. -?[0-9.e+-]+$' "$OUT" && ! grep -Eqi 'nan|inf' "$OUT" && [ -s r.nrrd ]; then
  ok "fdk: bad projection values replaced, one warning with the count, finite value range"
else
  bad "fdk with NaN/Inf/huge projections: exit $rc"
fi
rm -f r.nrrd
# Sinograms (16 bins x 20 angles x 2) and projections (16 x 2 rows x 20) as
# hand-made NRRDs; flat = 1000 except for four pixels that cannot calibrate.
nrrd() { # nrrd FILE W H N: zeros (float32) under a header
  printf 'NRRD0004\ntype: float\ndimension: 3\nsizes: %d %d %d\nendian: little\nencoding: raw\n\n' "$2" "$3" "$4" >"$1.hdr"
  head -c $(($2 * $3 * $4 * 4)) /dev/zero >"$1.dat"
}
finish_nrrd() { cat "$1.hdr" "$1.dat" >"$1"; rm -f "$1.hdr" "$1.dat"; }
# warns DESC NEEDLE OUTPUT ARGS...: exit 0, the warning on stderr, OUTPUT written.
warns() {
  local desc=$1 needle=$2 out=$3; shift 3
  run "$@"
  if [ "$rc" -eq 0 ] && grep -qF -- "$needle" "$ERR" && [ -s "$out" ]; then ok "$desc"; else bad "$desc: exit $rc"; fi
  rm -f "$out"
}
echo "# geometries FDK cannot reconstruct: warned, refused by --strict (issue 41)"
"$CTR" geometry --out arc120.json $GEO --views $NVIEWS --angle-range 120 2>/dev/null || exit 1
"$CTR" phantom --geometry arc120.json --out arc120.raw --quiet || exit 1
fails 3 "fdk --strict: a 120 deg orbit" \
  "'arc120.json': FDK cannot reconstruct|less than a short scan|refused: --strict|ctrecon iterate" \
  fdk --geometry arc120.json --projections arc120.raw --out r.nrrd --strict
# the detector's left edge 2 pixels (18 mm) left of the axis: a half-fan scan
"$CTR" geometry --out half.json $GEO --views $NVIEWS --offset-u 198 2>/dev/null || exit 1
"$CTR" phantom --geometry half.json --out half.raw --quiet 2>/dev/null || exit 1
# (issue 45: reconstructed on the CPU with Wang's weights and the rows extended; no warning)
run fdk --geometry half.json --projections half.raw --out r.nrrd --strict --device cpu
if [ "$rc" -eq 0 ] && [ -s r.nrrd ] && ! grep -q "warning" "$ERR"; then
  ok "fdk --strict: an offset (half-fan) detector is reconstructed on the CPU, no warning"
else
  bad "fdk --strict on a half-fan detector: exit $rc: $(cat "$ERR")"
fi
rm -f r.nrrd
warns "fdk --offset-weight off: an offset (half-fan) detector warns and names the iterative solvers" \
  "warning: FDK cannot reconstruct this geometry, the volume will be wrong: " r.nrrd \
  fdk --geometry half.json --projections half.raw --out r.nrrd --offset-weight off --device cpu
run fdk --geometry half.json --projections half.raw --out r.nrrd --strict --offset-weight off --device cpu
if [ "$rc" -eq 3 ] && [ ! -e r.nrrd ] &&
   grep -q "^ctrecon fdk: error: 'half.json': FDK cannot reconstruct .*offset (half-fan) detector.*without its redundancy weights (--offset-weight off).*use an iterative solver instead (ctrecon iterate)$" "$ERR"; then
  ok "fdk --strict --offset-weight off: an offset (half-fan) detector is refused (exit 3)"
else
  bad "fdk --strict --offset-weight off on a half-fan detector: exit $rc"
fi
run fdk --geometry g.json --projections p.raw --out r.nrrd --strict
if [ "$rc" -eq 0 ] && ! grep -q "FDK cannot" "$ERR"; then ok "fdk --strict: a full circle passes"
else bad "fdk --strict on a full circle: exit $rc"; fi
rm -f r.nrrd
nrrd sino.nrrd 16 20 2; put sino.nrrd.dat 100 $NAN; finish_nrrd sino.nrrd
# --axis: the data are blank apart from the NaN (zeros: no axis can be found from them)
FBPS="fbp --sinograms sino.nrrd --out s.nrrd --device cpu --quiet --axis 7.5"
fails 3 "fbp --strict: a NaN sinogram value" "sino.nrrd|1 values NaN|strict" $FBPS --strict
warns "fbp: a NaN sinogram value replaced with a warning" \
  "warning: 'sino.nrrd': 1 sinogram values NaN, infinite or beyond +-1e24 replaced by 0" s.nrrd $FBPS
echo "# library errors reach the tool in its words: flags, not C fields or enums (issue 41)"
# Each fails with one error line that names the flag, and no ctr_... or CTR_...
# identifier (the table of cli_fields.c, and its fallbacks, translate them).
IT="iterate --geometry g.json --projections p.raw --out r.nrrd --device cpu --quiet"
no_c_names() { # NEEDLE ARGS...: an error naming NEEDLE, in the tool's words
  local needle=$1; shift
  run "$@"
  if [ "$rc" -ne 0 ] && [ -s "$ERR" ] && grep -qF -- "$needle" "$ERR" &&
     ! grep -Eq 'ctr_[a-z]|CTR_[A-Z]' "$ERR" && [ ! -e r.nrrd ] && [ ! -e s.nrrd ]; then
    ok "in the tool's words: $* -> $(head -1 "$ERR")"
  else
    bad "C names or no '$needle' in the error of: $* (exit $rc)"
  fi
}
no_c_names "--read-ahead = 17" $FBPS --read-ahead 17
no_c_names "--stripe-wavelet = 11" $FBPS --stripe wavelet --stripe-wavelet 11
no_c_names "--stripe-level = 9" $FBPS --stripe wavelet --stripe-level 9
no_c_names "--stripe-size = 4" $FBPS --stripe sorting --stripe-size 4
no_c_names "--dezinger-size = 4" $FBPS --dezinger 1 --dezinger-size 4
# a sinogram with a feature (a blank one has no axis to find at all)
nrrd feat.nrrd 16 20 2; for o in 100 164 228 292 356; do put feat.nrrd.dat $o 0000803f; done
finish_nrrd feat.nrrd
no_c_names "--center-method correlation needs: use --center-method vo" \
  fbp --sinograms feat.nrrd --out s.nrrd --device cpu --quiet --center-method correlation
no_c_names "--iterations is 2000000000" $IT --iterations 2000000000
no_c_names "--tv-iterations 200000" $IT --algorithm fista-tv --tv-weight 1 --tv-iterations 200000
no_c_names "--nonneg" $IT --algorithm cgls --nonneg
no_c_names "--workers '17'" $FDK --projections p.raw --workers 17
no_c_names "--strict" fdk --geometry arc120.json --projections arc120.raw --out r.nrrd --strict
rm -f r.nrrd s.nrrd
echo "# integer options documented from 1 refuse 0 (it would select a default; issue 41)"
for opt in --stripe-size --stripe-level --stripe-wavelet --dezinger-size; do
  fails 2 "fbp $opt 0" "$opt '0'|expected a whole number >= 1" $FBPS $opt 0
done
fails 2 "fdk --workers 0" "--workers '0'|positive integer" $FDK --projections p.raw --workers 0
nrrd proj.nrrd 16 2 20
for i in $(seq 0 639); do printf '\x00\x00\x7a\x44'; done >proj.nrrd.dat # 1000.0 everywhere
finish_nrrd proj.nrrd
nrrd flat.nrrd 16 2 1; for i in $(seq 0 31); do printf '\x00\x00\xfa\x44'; done >flat.nrrd.dat # 2000
put flat.nrrd.dat 0 00000000; put flat.nrrd.dat 4 $NAN; finish_nrrd flat.nrrd
nrrd dark.nrrd 16 2 1; put dark.nrrd.dat 8 0000fa45; finish_nrrd dark.nrrd # dark 8000 > flat at pixel 2
FBPP="fbp --projections proj.nrrd --flat flat.nrrd --dark dark.nrrd --out s.nrrd --device cpu --quiet"
fails 3 "fbp --strict: flat = 0, NaN flat, dark > flat" "flat/dark: 3 pixels with flat <= dark|strict" $FBPP --strict
warns "fbp: uncalibrated flat/dark pixels counted in a warning" \
  "warning: 'flat.nrrd' / 'dark.nrrd': 3 pixels with flat <= dark or a non-finite flat or dark" s.nrrd $FBPP
# each warning once: the tool's (naming the files), not the library's as well (issue 41)
for args in "$FBPP" "$FBPS"; do
  run $args
  [ "$rc" -eq 0 ] && [ "$(grep -c 'warning:' "$ERR")" -eq 1 ] && ok "fbp: one warning line ($args)" ||
    bad "fbp warnings not once: exit $rc, $(grep -c 'warning:' "$ERR") lines ($args)"
  rm -f s.nrrd
done
warns "fbp: --axis outside the detector warns" "warning: --axis 40 lies outside the detector's bins 0 .. 15" \
  s.nrrd $FBPS --axis 40
fails 2 "fbp --paganin-delta-beta with --sinograms" "--paganin-delta-beta applies to --projections only" $FBPS --paganin-delta-beta 100 --energy 20 --distance 100 --pixel-size 0.001
fails 2 "fbp --paganin-delta-beta without --energy" "--paganin-delta-beta needs --energy" $FBPP --paganin-delta-beta 100
fails 2 "fbp --stripe with an unknown method" "--stripe 'fourier'|none, sorting or wavelet" $FBPS --stripe fourier
fails 2 "fbp --out-range with --out-scale" "--out-range sets --out-scale" $FBPS --out-dtype uint16 --out-range 0:1 --out-scale 3
fails 2 "fbp --flat with --sinograms" "--flat applies to --projections only" $FBPS --flat flat.nrrd
fails 2 "fbp --bp-kernel on the CPU" "--bp-kernel alu|CPU" $FBPS --bp-kernel alu
fails 2 "fbp --out-scale with float32 output" "--out-scale, --out-offset and --out-range apply to --out-dtype uint16" $FBPS --out-scale 10
fails 2 "fdk --out-scale with float32 output" "--out-scale applies to --out-dtype uint16" $FDK --projections p.raw --out-scale 10
fails 2 "fdk --preview-window without --preview" "--preview-window applies to --preview" $FDK --projections p.raw --preview-window 0:1
sed 's/"offset_u"/"ofset_u"/' g.json >typo.json
fails 3 "geometry key typo (ofset_u)" "typo.json|detector.ofset_u: unknown field|did you mean 'offset_u'" $FDK --projections p.raw --geometry typo.json
sed 's/"direction"/"directon"/' g.json >typo2.json
fails 3 "geometry key typo (directon)" "typo2.json|angles.directon|did you mean 'direction'" phantom --geometry typo2.json --out q.raw
echo '{"ellipsoids": [{"density": 1, "centre_mm": [0, 0, 0], "semi_axes_mm": [9, 9, 9]}]}' >typo_phantom.json
fails 3 "phantom key typo (centre_mm)" "typo_phantom.json|centre_mm: unknown field|did you mean 'center_mm'" phantom --geometry g.json --phantom typo_phantom.json --out q.raw
echo '{"ellipsoids": [{"density": 1e38, "center_mm": [0, 0, 0], "semi_axes_mm": [90, 90, 90]}]}' >dense.json
fails 3 "phantom whose projections overflow float" "dense.json|projection values are not finite" phantom --geometry g.json --phantom dense.json --out q.raw
sed 's/"sdd":[^,]*,/"sdd": 900,/' g.json >sdd.json
fails 3 "sdd < sid (detector between source and axis)" "sdd.json|sdd = 900 <= sid = 1000" $FDK --projections p.raw --geometry sdd.json
sed 's/"sdd":[^,]*,/"sdd": 1000,/' g.json >sdd2.json
fails 3 "sdd == sid" "sdd2.json|sdd = 1000 <= sid = 1000" phantom --geometry sdd2.json --out q.raw
cat p.nrrd p.raw >long.nrrd
fails 3 "nrrd longer than its header says" "long.nrrd|data bytes|'type' and 'sizes'" $FDK --projections long.nrrd
# PET histo-images with a NaN and a negative count.
"$CTR" pet simulate --lattice 16x16x4 --views 4x1 --events 2e4 --device cpu --out pd.json --quiet || exit 1
put pd.counts.raw 400 $NAN; put pd.counts.raw 800 000080bf # -1.0
PREC="pet recon --data pd.json --iterations 1 --device cpu --quiet --out pr.nrrd"
fails 3 "pet recon --strict: NaN and negative counts" "pd.json|2 counts or factors NaN|--strict" $PREC --strict
warns "pet recon: bad counts used as 0 with a warning" \
  "warning: 'pd.json': 2 counts or factors NaN, infinite, negative or beyond 1e24 used as 0" pr.nrrd $PREC
run geometry --out wide.json --nu 48 --nv 40 --du 9 --dv 12 --views $NVIEWS --volume 32 --voxel 8 --sid 300 --sdd 500
[ "$rc" -eq 0 ] && grep -q "warning: cone angle 51.3 deg" "$ERR" && ok "an unusual cone angle warns" ||
  bad "no cone angle warning: exit $rc"
rm -f wide.json

echo "# warnings (exit 0)"
"$CTR" geometry --out narrow.json --nu 20 --nv 40 --du 9 --dv 12 --views $NVIEWS --volume 32 --voxel 8 \
  >/dev/null 2>"$TOP/log/geo_err"
grep -q "warning: detector does not cover the volume's field of view: .* % of the field of view is outside the detector in some views" \
  "$TOP/log/geo_err" && ok "geometry warns about coverage" || bad "no coverage warning from geometry"
for cmd in "phantom --geometry narrow.json --out pn.raw" "fdk --geometry narrow.json --projections pn.raw --out rn.raw"; do
  run $cmd
  if [ "$rc" -eq 0 ] && grep -q "^ctrecon ${cmd%% *}: warning: detector does not cover .* outside the detector" "$ERR" &&
     [ -f "${cmd##* }" ]; then
    ok "${cmd%% *}: coverage warning, exit 0, output written"
  else
    bad "${cmd%% *} with a narrow detector: exit $rc"
  fi
done
run $FDK --projections p.nrrd --raw-dtype uint16 --quiet
[ "$rc" -eq 0 ] && grep -q 'warning: --raw-dtype and --raw-offset apply to raw files only' "$ERR" &&
  ok "--raw-dtype on a nrrd warns" || bad "--raw-dtype on nrrd"
rm -f r.nrrd
echo "previous result" >keep.nrrd
run fdk --geometry g.json --projections short.raw --out keep.nrrd --force
[ "$rc" -eq 3 ] && [ "$(cat keep.nrrd)" = "previous result" ] &&
  ok "a failed run leaves an existing output untouched, even with --force" ||
  bad "existing output changed"
leftover=$(find . -name '*.tmp.*' -o -name '*partial*')
[ -z "$leftover" ] && ok "no temporaries anywhere" || bad "temporaries: $leftover"

finish
