#!/usr/bin/env bash
# Laminography from the command line (docs/geometry.md, "Laminography"):
# `demo --parallel --tilt`, `fbp --tilt` (the demo's volume to the byte),
# `iterate --tilt` (CGLS separates the disks), the options' errors.
# Usage: bash cli_lamino.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 < b + 0) }'; }

step "demo --parallel --tilt 20" demo --parallel --tilt 20 --size 48 --views 120 --slices 18 \
  --out-dir ld --device cpu
grep -q '^disk core means' "$OUT" && ok "demo prints the disks' means" || bad "demo summary"
# FBP reaches its missing-cone limit: each mean within 0.03 of it (test_lamino derives it)
read -r m0 m1 m2 k0 k1 k2 <<<"$(awk '/^disk core means/ { gsub(/[();]/, " "); print $4, $5, $6, $14, $15, $16 }' "$OUT")"
for i in 0 1 2; do
  eval "m=\$m$i k=\$k$i"
  awk -v a="$m" -v b="$k" 'BEGIN { d = a - b; exit !(a != "" && d < 0.03 && d > -0.03) }' &&
    ok "disk $i: FBP mean $m at its missing-cone limit $k" || bad "disk $i: mean '$m', limit '$k'"
done
gap=$(awk '/^between the disks/ { print ($4 > $5 ? $4 : $5) }' "$OUT")
below "$gap" "$(awk -v a="$m1" 'BEGIN { print a / 2 }')" && ok "FBP: between the disks $gap < half the middle disk" ||
  bad "FBP between the disks '$gap'"
[ -s ld/sinograms.tif ] && [ -s ld/recon.nrrd ] && head -c 8 ld/recon_xz.png | grep -q PNG &&
  ok "demo wrote sinograms, volume, xz preview" || bad "demo files missing"

# 48 * sqrt(2) -> 68 bins, axis 33.5; 256 / 48 mm
P=$(awk 'BEGIN { printf "%.17g", 256 / 48 }')
L=(--sinograms ld/sinograms.tif --tilt 20 --angle-range 360 --pixel-size "$P" --size 48 --device cpu)
step "fbp --tilt" fbp "${L[@]}" --slices 18 --axis 33.5 --out f.nrrd --preview pv
grep -Eq '^fbp: 18 slices of 48 x 48 from 120 angles x 68 bins' "$OUT" && ok "fbp summary" || bad "fbp summary"
tail -c $((48 * 48 * 18 * 4)) f.nrrd > f.raw; tail -c $((48 * 48 * 18 * 4)) ld/recon.nrrd > d.raw
same f.raw d.raw "fbp --tilt gives the demo's volume to the byte"
for s in xy xz yz; do head -c 8 "pv_$s.png" | grep -q PNG && ok "pv_$s.png" || bad "pv_$s.png"; done
step "fbp --tilt, the axis by default (the centre, warned)" fbp "${L[@]}" --slices 18 --out c.nrrd
grep -q "the axis is not searched for" "$ERR" && ok "warned about the axis" || bad "no axis warning"
tail -c $((48 * 48 * 18 * 4)) c.nrrd > c.raw
same f.raw c.raw "the default axis is the detector's centre"
step "fbp --tilt in radians" fbp --sinograms ld/sinograms.tif --tilt 0.3490658503988659 \
  --angle-units rad --angle-range 6.283185307179586 --pixel-size "$P" --size 48 --device cpu \
  --slices 18 --axis 33.5 --out rad.nrrd
tail -c $((48 * 48 * 18 * 4)) rad.nrrd > rad.raw
close_raw f.raw rad.raw 1e-5 && ok "--angle-units rad: the same volume" || bad "radians differ"
# the same scan as a geometry file (docs/parallel-beam.md, "Geometry files")
cat > par.json <<JSON
{"type": "parallel", "nbins": 68, "angles": {"count": 120, "start_deg": 0, "range_deg": 360},
 "axis": 33.5, "nx": 48, "ny": 48, "pixel_size": $P, "tilt_deg": 20, "nrows": 43}
JSON
step "fbp --geometry par.json (tilted)" fbp --sinograms ld/sinograms.tif --geometry par.json \
  --slices 18 --device cpu --out gj.nrrd
tail -c $((48 * 48 * 18 * 4)) gj.nrrd > gj.raw
same f.raw gj.raw "fbp --geometry gives the options' volume to the byte"
exits 2 "fbp --geometry with --axis" fbp --sinograms ld/sinograms.tif --geometry par.json --axis 3 \
  --out e.nrrd
grep -q -- "drop --axis" "$ERR" && ok "the error names --axis" || bad "--geometry clash error"
sed 's/"tilt_deg"/"tilt"/' par.json > bad.json
run fbp --sinograms ld/sinograms.tif --geometry bad.json --out e.nrrd
[ "$rc" -ne 0 ] && grep -q "bad.json" "$ERR" && grep -q "tilt_deg" "$ERR" &&
  ok "a misspelt member: an error naming the file and tilt_deg" || bad "misspelt member: rc $rc"
sed 's/"nbins": 68/"nbins": 60/' par.json > nb.json
run fbp --sinograms ld/sinograms.tif --geometry nb.json --out e.nrrd
[ "$rc" -ne 0 ] && grep -q "60 bins x 120 angles" "$ERR" && ok "a geometry of other bins refused" ||
  bad "nbins mismatch: rc $rc"
[ ! -e e.nrrd ] && ok "no output from the refused runs" || bad "e.nrrd written"
exits 2 "fbp --tilt 95" fbp "${L[@]}" --tilt 95 --out e.nrrd
exits 2 "fbp --slices without --tilt" fbp --sinograms ld/sinograms.tif --slices 4 --out e.nrrd
exits 2 "fbp --tilt with --rows" fbp "${L[@]}" --rows 1:4 --out e.nrrd
grep -q -- "--rows" "$ERR" && ok "the error names --rows" || bad "error text"
exits 2 "fbp --tilt with --stripe" fbp "${L[@]}" --stripe sorting --out e.nrrd
run fbp "${L[@]}" --tilt 0.5 --axis 33.5 --out w.nrrd
grep -q "looks like radians" "$ERR" && ok "--tilt 0.5 is warned as radians-looking" || bad "no radians warning"
exits 2 "iterate --tilt with a cone-beam geometry" iterate --geometry g.json --projections p.raw \
  --tilt 20 --out e.nrrd
grep -q -- "--tilt and --slices describe a tilted parallel-beam axis" "$ERR" && ok "the error says why" ||
  bad "iterate --tilt --geometry error"

step "iterate --tilt (cgls)" iterate "${L[@]}" --slices 18 --out it.nrrd --algorithm cgls \
  --iterations 12
grep -q "68 x 120 x 43 projections .* -> 48 x 48 x 18 voxels" "$OUT" &&
  ok "iterate: bins x angles x rows -> the --slices" || bad "iterate dims"
[ "$(($(wc -c < it.nrrd) >= 48 * 48 * 18 * 4))" -eq 1 ] && ok "iterate wrote 48 x 48 x 18" || bad "it.nrrd size"
step "iterate --sinograms --geometry par.json" iterate --sinograms ld/sinograms.tif --geometry par.json \
  --slices 18 --device cpu --out itg.nrrd --algorithm cgls --iterations 12
cmp -s <(tail -c $((48 * 48 * 18 * 4)) it.nrrd) <(tail -c $((48 * 48 * 18 * 4)) itg.nrrd) &&
  ok "iterate --geometry gives the options' volume to the byte" || bad "iterate --geometry differs"
exits 2 "iterate --geometry par.json with --tilt" iterate --sinograms ld/sinograms.tif \
  --geometry par.json --tilt 20 --out e.nrrd
clean "laminography runs"
finish
