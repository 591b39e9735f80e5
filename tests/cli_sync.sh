#!/usr/bin/env bash
# `ctrecon fbp` end to end on small DXchange files (the synchrotron pipeline,
# docs/synchrotron.md): the axis found and printed, a run stopped after two
# bands and resumed bit-identical, every correction from the command line,
# float16 / uint16 / HDF5 outputs, a 360-degree offset-axis scan stitched.
# Runs the test CLI (fault injection: CTRECON_INJECT_STOP_AFTER_SLABS).
# Usage: bash cli_sync.sh path/to/ctrecon_inject_cli (make_dxchange beside it)
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"
MAKE=$(dirname "$CTR")/make_dxchange
if ! "$CTR" info | grep -Eq '^ +hdf5 +yes' || [ ! -x "$MAKE" ]; then
  echo "no HDF5 in this build: skipped"; exit 77
fi
step() {
  local desc=$1; shift
  run "$@"
  if [ "$rc" -eq 0 ]; then ok "$desc"; else bad "$desc: exit $rc"; fi
}
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= t) }'; }

"$MAKE" scan.h5 64 12 90 34.8 180 && ok "DXchange file made" || bad "make_dxchange"
F=(fbp --projections scan.h5 --device cpu --pixel-size 0.01)

echo "# /exchange/theta: named only where the file has it (issue 41)"
run "${F[@]}" --angle-range 180 --out t.nrrd --quiet
[ "$rc" -eq 2 ] && grep -q "the angles come from 'scan.h5':/exchange/theta: drop them" "$ERR" &&
  ok "a uniform scan's options with /exchange/theta: refused, naming it" || bad "theta and --angle-range: exit $rc"
CTRECON_NO_THETA=1 "$MAKE" notheta.h5 64 12 90 34.8 180 || bad "make_dxchange without theta"
run fbp --projections notheta.h5 --device cpu --pixel-size 0.01 --out t.nrrd --quiet
[ "$rc" -eq 3 ] && grep -q "'notheta.h5' has no /exchange/theta: give the angles with --angles FILE, or --angle-start and --angle-range" "$ERR" &&
  ! grep -q "angles come from" "$ERR" && ok "no /exchange/theta and no angles: says so" ||
  bad "no theta, no angles: exit $rc"
run fbp --projections notheta.h5 --device cpu --pixel-size 0.01 --angle-range 180 --out t.nrrd --quiet
[ "$rc" -eq 0 ] && [ -s t.nrrd ] && run "${F[@]}" --out t2.nrrd --quiet && cmp -s t.nrrd t2.nrrd &&
  ok "no /exchange/theta: --angle-range gives the angles (the same slices as theta's)" ||
  bad "no theta with --angle-range: exit $rc"
rm -f t.nrrd t2.nrrd
echo "# an HDF5 filter plugin that is not installed: named, with how to get it (issue 41)"
CTRECON_LZF=1 "$MAKE" lzf.h5 64 12 90 34.8 180 || bad "make_dxchange with LZF"
run fbp --projections lzf.h5 --device cpu --pixel-size 0.01 --out t.nrrd --quiet
[ "$rc" -eq 4 ] && [ "$(wc -l <"$ERR")" -eq 1 ] &&
  grep -q "'/exchange/data' of HDF5 file 'lzf.h5' is compressed with the LZF filter (HDF5 filter 32000)" "$ERR" &&
  grep -q "pip install hdf5plugin" "$ERR" && grep -q "HDF5_PLUGIN_PATH" "$ERR" && ! grep -qi "directory" "$ERR" &&
  [ ! -e t.nrrd ] && ok "a missing LZF plugin: named, with hdf5plugin and HDF5_PLUGIN_PATH (exit 4)" ||
  bad "missing LZF plugin: exit $rc"

step "fbp of a DXchange file, axis found" "${F[@]}" --out rec.nrrd
axis=$(awk '/^rotation axis:/ {print $3}' "$OUT")
near "$axis" 34.8 0.25 && ok "axis found and printed: $axis (true 34.8)" || bad "axis '$axis'"

# stopped after 2 bands (test build), resumed: the bytes of an uninterrupted run
step "fbp --axis, bands of 3" "${F[@]}" --axis 34.8 --batch 3 --out a.raw
CTRECON_INJECT_STOP_AFTER_SLABS=2 run "${F[@]}" --axis 34.8 --batch 3 --out b.raw
[ "$rc" -ne 0 ] && [ ! -e b.raw ] && [ -e b.raw.partial ] && grep -q -- "--resume" "$ERR" &&
  ok "stopped after 2 bands: partial kept, --resume advised" || bad "stopped run: exit $rc"
step "fbp --resume" "${F[@]}" --axis 34.8 --batch 3 --out b.raw --resume
cmp -s a.raw b.raw && ok "resumed output = uninterrupted output" || bad "resumed output differs"
[ ! -e b.raw.partial ] && [ ! -e b.raw.partial.journal ] && ok "no partial or journal left" ||
  bad "partial files left"

# every correction, float16 multi-page TIFF
step "fbp with dezinger, rings, Paganin, binning, float16" "${F[@]}" --axis 34.8 --dezinger 0.3 \
  --stripe sorting --stripe-size 5 --paganin-delta-beta 50 --energy 20 --distance 30 --bin 2 --out-dtype float16 \
  --out c.tif --timings
[ "$(wc -c < c.tif)" -gt $((32 * 32 * 6 * 2)) ] && ok "c.tif holds 6 float16 slices of 32^2" ||
  bad "c.tif size $(wc -c < c.tif)"
grep -q "bands of" "$ERR" && ok "--timings prints the busy times" || bad "no timings"
step "fbp --stripe wavelet, uint16 --out-range, HDF5 out" "${F[@]}" --axis 34.8 --stripe wavelet \
  --out-dtype uint16 --out-range -1:4 --out 'r.h5:/exchange/recon' --angle-subset 0:90:2
head -c 8 r.h5 | od -c | grep -q 'H   D   F' && ok "r.h5 is HDF5" || bad "r.h5 signature"
grep -q "from 45 angles" "$OUT" && ok "--angle-subset 0:90:2 used 45 projections" || bad "subset"

# binning that leaves rows or columns over says so; one projection is refused
step "fbp --bin 5x5 (12 rows, 64 columns)" "${F[@]}" --axis 34.8 --bin 5x5 --out bin5.raw
grep -q "the last 2 of the 12 rows reconstructed do not fill a bin and are left out" "$ERR" &&
  ok "the 2 rows left over by --bin are named" || bad "rows left over: $(cat "$ERR")"
grep -q "the last 4 of the 64 detector columns do not fill a bin and are left out" "$ERR" &&
  ok "the 4 columns left over by --bin are named" || bad "columns left over: $(cat "$ERR")"
[ "$(wc -c < bin5.raw)" -eq $((12 * 12 * 2 * 4)) ] && ok "2 slices of 12^2 from 12 rows binned by 5" ||
  bad "bin5.raw size $(wc -c < bin5.raw)"
run "${F[@]}" --axis 34.8 --angle-subset 0:40:100 --out one.raw
[ "$rc" -eq 2 ] && grep -q "angle-subset 0:40:100 selects 1 projection of the 90: a reconstruction needs at least 2" "$ERR" &&
  [ ! -e one.raw ] && ok "--angle-subset selecting 1 projection is refused" || bad "one projection: exit $rc: $(cat "$ERR")"

# the angles of a DXchange file are its theta: a uniform --angle-range would do nothing
run "${F[@]}" --axis 34.8 --angle-range 90 --out u.raw
[ "$rc" -eq 2 ] && grep -q "the angles come from 'scan.h5':/exchange/theta" "$ERR" && [ ! -e u.raw ] &&
  ok "--angle-range with a DXchange file refused, naming theta" || bad "--angle-range with DXchange: exit $rc"

# a 360-degree scan with the axis near the right edge, stitched
"$MAKE" s360.h5 48 4 240 40.3 360 22 && ok "360-degree DXchange file made" || bad "make_dxchange 360"
step "fbp --stitch-360, axis found" fbp --projections s360.h5 --device cpu --stitch-360 --out s.nrrd
axis=$(awk '/^rotation axis:/ {print $3}' "$OUT")
near "$axis" 40.3 0.25 && ok "360 axis found: $axis (true 40.3)" || bad "360 axis '$axis'"
grep -q "correlation" "$OUT" && ok "found by the correlation of opposite projections" || bad "method"
grep -Eq '^sizes: 82 82 4' s.nrrd && ok "stitched field of view: 82 bins" ||
  bad "s.nrrd sizes: $(grep -a '^sizes' s.nrrd)"
# theta in radians: with units="rad" (h5py's variable-length string) read as radians, the
# same slices as the degrees file (it was read as degrees: 57 x too small, a wrong volume with
# exit 0); without a units attribute a warning naming radians and how to say the units;
# units="deg" silences it; an unknown unit is an error naming the dataset.
step "degrees file, axis given" "${F[@]}" --axis 34.8 --out tdeg.raw
"$MAKE" trad.h5 64 12 90 34.8 180 0 rad && ok "DXchange file with theta in radians" || bad "make rad"
step "theta units=rad" fbp --projections trad.h5 --device cpu --pixel-size 0.01 --axis 34.8 --out trad.raw
grep -q "radians" "$ERR" && bad "units=rad warned: $(cat "$ERR")" || ok "units=rad: no warning"
close_raw tdeg.raw trad.raw 1e-4 &&
  ok "theta in radians with units=rad gives the degrees file's slices" || bad "units=rad slices differ"
"$MAKE" tnone.h5 64 12 90 34.8 3.14159 && ok "DXchange file of a 3.14-unit theta, no units" || bad "make none"
step "theta spanning 3.1 'degrees', no units" fbp --projections tnone.h5 --device cpu --axis 34.8 --out tn.raw
grep -q "warning: the 90 angles (/exchange/theta of 'tnone.h5', without a units attribute: units=\"rad\" or \"deg\" there says which) span only 3.1.* degrees: they look like radians" "$ERR" &&
  ok "warned: looks like radians, names theta and its units attribute" || bad "no radians warning: $(cat "$ERR")"
"$MAKE" tdeg.h5 64 12 90 34.8 3.14159 0 deg && ok "DXchange file, units=deg" || bad "make deg"
step "theta units=deg" fbp --projections tdeg.h5 --device cpu --axis 34.8 --out td.raw
grep -q "radians" "$ERR" && bad "units=deg warned" || ok "units=deg: no warning"
"$MAKE" tgon.h5 64 12 90 34.8 180 0 gon && ok "DXchange file, units=gon" || bad "make gon"
exits 3 "theta units=gon" fbp --projections tgon.h5 --device cpu --axis 34.8 --out tg.raw
grep -q "dataset '/exchange/theta' of HDF5 file 'tgon.h5': units 'gon': expected deg, degree, degrees, rad, radian or radians" "$ERR" &&
  [ ! -e tg.raw ] && ok "unknown unit: error naming the dataset" || bad "units=gon: $(cat "$ERR")"
finish
