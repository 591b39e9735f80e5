#!/usr/bin/env bash
# `ctrecon demo --parallel` and `ctrecon fbp`: accuracy against the phantom,
# the sinogram file round trip, batching equivalence, previews, errors.
# Usage: bash cli_fbp.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 < b + 0) }'; }

step "demo --parallel" demo --parallel --size 96 --views 180 --slices 6 --out-dir pd --device cpu
flat=$(awk '/^RMSE vs the phantom/ {print $5}' "$OUT")
below "$flat" 0.01 && ok "parallel demo RMSE away from edges $flat < 0.01" || bad "parallel demo RMSE '$flat'"
[ -s pd/sinograms.tif ] && [ -s pd/recon.nrrd ] && head -c 8 pd/recon_xy.png | grep -q PNG &&
  ok "demo wrote sinograms, volume, previews" || bad "demo files missing"
fromp=$(awk '/^RMSE from the uint16 projections/ {print $6}' "$OUT")
below "$fromp" 0.01 && ok "from uint16 projections with flat/dark: RMSE $fromp < 0.01" ||
  bad "RMSE from projections '$fromp'"

# The demo's uint16 projections with flat and dark fields, a block of rows at a time.
PP=(fbp --projections pd/projections.tif --flat pd/flat.tif --dark pd/dark.tif --window hann --device cpu
    --pixel-size "$(awk 'BEGIN { printf "%.17g", 256 / 96 }')")
step "fbp --projections --flat --dark" "${PP[@]}" --out rp.raw --batch 4
[ "$(wc -c < rp.raw)" -eq $((96 * 96 * 6 * 4)) ] && ok "rp.raw size" || bad "rp.raw size"
step "fbp --projections --rows 2:5" "${PP[@]}" --rows 2:5 --out rp3.raw
[ "$(wc -c < rp3.raw)" -eq $((96 * 96 * 3 * 4)) ] && ok "3 slices for --rows 2:5" || bad "rp3.raw size"
dd if=rp.raw of=rows2to5.raw bs=$((96 * 96 * 4)) skip=2 count=3 2>/dev/null
# The same slices whatever the block boundaries.
if cmp -s rows2to5.raw rp3.raw; then ok "--rows 2:5 = slices 2..4 of the full run"; else
  note=$(cmp rows2to5.raw rp3.raw | head -1); bad "--rows 2:5 differs from slices 2..4: $note"; fi
exits 2 "--rows beyond the projections" "${PP[@]}" --rows 4:9 --out e.raw

# The demo's sinograms through `ctrecon fbp` (256 mm over 96 bins).
P=$(awk 'BEGIN { printf "%.17g", 256 / 96 }')
FBP=(fbp --sinograms pd/sinograms.tif --pixel-size "$P" --window hann --device cpu)
step "fbp of the demo's sinograms" "${FBP[@]}" --out r.raw --preview prev
grep -Eq '^fbp: 6 slices of 96 x 96 from 180 angles x 96 bins' "$OUT" && ok "fbp summary" || bad "fbp summary"
[ "$(wc -c < r.raw)" -eq $((96 * 96 * 6 * 4)) ] && ok "r.raw size" || bad "r.raw size"
for s in xy xz yz; do head -c 8 "prev_$s.png" | grep -q PNG && ok "prev_$s.png" || bad "prev_$s.png"; done
step "fbp in batches of 4" "${FBP[@]}" --out r4.raw --batch 4
cmp -s r.raw r4.raw && ok "batched run is byte-identical" || bad "batched run differs"
step "fbp with --gpu-budget on the CPU (the GPU pipeline's budget)" "${FBP[@]}" --out rg.raw --gpu-budget 1M
cmp -s r.raw rg.raw && ok "--gpu-budget leaves a CPU run as it is" || bad "--gpu-budget changed a CPU run"
mkdir -p st
step "fbp, nearest, tiff stack out" "${FBP[@]}" --interp nearest --out 'st/s_%02d.tif' --quiet
[ "$(ls st | wc -l)" -eq 6 ] && ok "6 slice files" || bad "slice files: $(ls st | wc -l)"
if "$CTR" info | grep -Eq '^ +hdf5 +yes'; then
  step "fbp, HDF5 out" "${FBP[@]}" --out 'rec.h5:/exchange/recon' --quiet
  head -c 8 rec.h5 | od -c | grep -q 'H   D   F' && ok "rec.h5 is HDF5" || bad "rec.h5 signature"
  [ "$(wc -c < rec.h5)" -gt $((96 * 96 * 6 * 4)) ] && ok "rec.h5 holds the slices" || bad "rec.h5 size"
  ls rec.h5.tmp.* > /dev/null 2>&1 && bad "temporary left behind" || ok "no temporary left"
  # A second dataset goes into the same file beside the first, which stays
  # as it was; the same dataset again is refused and the file kept.
  RE=(fbp --sinograms 'rec.h5:/exchange/recon' --device cpu --quiet)
  step "fbp reads rec.h5:/exchange/recon" "${RE[@]}" --out re1.raw
  step "fbp, a second dataset into rec.h5" "${FBP[@]}" --out 'rec.h5:/other/recon' --quiet
  step "the first dataset is still there" "${RE[@]}" --out re2.raw
  same re1.raw re2.raw "the first dataset is unchanged by the second"
  step "the second dataset is there" fbp --sinograms 'rec.h5:/other/recon' --device cpu --quiet --out re3.raw
  same re1.raw re3.raw "the second dataset holds the same slices"
  cp rec.h5 rec-before.h5
  exits 2 "fbp into a dataset that exists" "${FBP[@]}" --out 'rec.h5:/exchange/recon' --quiet
  grep -q "\-\-out: 'rec.h5:/exchange/recon' exists and is kept: add --force" "$ERR" &&
    ok "the refusal names --out, the dataset and --force" ||
    bad "refusal: $(cat "$ERR")"
  same rec.h5 rec-before.h5 "the refused run left rec.h5 as it was"
  ls rec.h5.tmp.* > /dev/null 2>&1 && bad "temporary left behind" || ok "no temporary left"
  # --force replaces that dataset; the file's other one stays
  step "fbp --force into a dataset that exists" "${FBP[@]}" --out 'rec.h5:/exchange/recon' --quiet \
    --force --window ram-lak
  step "the replaced dataset" "${RE[@]}" --out re4.raw
  cmp -s re1.raw re4.raw && bad "--force did not replace the dataset" || ok "--force replaced it"
  step "the other dataset" fbp --sinograms 'rec.h5:/other/recon' --device cpu --quiet --out re5.raw
  same re1.raw re5.raw "the other dataset is unchanged by --force"
fi

# An explicit angle list equal to the uniform one gives the same bytes.
awk 'BEGIN { for (a = 0; a < 180; a++) printf "%.17g\n", a * 180 / 180 }' > angles.txt
step "fbp --angles" "${FBP[@]}" --angles angles.txt --out ra.raw
cmp -s r.raw ra.raw && ok "angle file = uniform angles" || bad "angle file result differs"
# The same angles on one line of 3500 characters (numbers cut at a read
# buffer's edge were read as two before).
awk 'BEGIN { for (a = 0; a < 180; a++) printf "%022.15f, ", a * 180 / 180; print "" }' > angles1.txt
step "fbp --angles, all on one long line" "${FBP[@]}" --angles angles1.txt --out ra1.raw
cmp -s r.raw ra1.raw && ok "one-line angle file = uniform angles" || bad "one-line angle file result differs"

echo "# errors"
exits 2 "both --sinograms and --projections" fbp --sinograms pd/sinograms.tif --projections x.tif --out e.raw
exits 2 "neither input" fbp --out e.raw
head -5 angles.txt > short.txt
exits 3 "angle file with 5 of 180 angles" "${FBP[@]}" --angles short.txt --out e.raw
grep -q "180" "$ERR" && ok "the message states the expected count" || bad "no count in the message"
{ cat angles.txt; echo 180; } > long.txt
exits 3 "angle file with 181 of 180 angles" "${FBP[@]}" --angles long.txt --out e.raw
grep -q "long.txt' holds more than 180 numbers" "$ERR" && ok "the message names the file and the count" || bad "too many angles: $(cat "$ERR")"
{ head -3 angles.txt; echo "1.5x"; } > nan.txt
exits 3 "angle file with a word" "${FBP[@]}" --angles nan.txt --out e.raw
grep -q "'1.5x' is not a finite number" "$ERR" && ok "the message names the bad entry" || bad "bad entry: $(cat "$ERR")"
# Sizes beyond sense: refused, not a blank or constant image with exit 0.
exits 3 "--voxel 1e20" "${FBP[@]}" --voxel 1e20 --out e.raw
grep -q "voxel 1e+20, --pixel-size .*: expected a voxel of 1e-6 .. 1e6 bins" "$ERR" &&
  ok "the message names --voxel and its bounds" || bad "--voxel 1e20: $(cat "$ERR")"
exits 3 "--pixel-size 1e12" "${FBP[@]}" --pixel-size 1e12 --out e.raw
grep -q -- "--pixel-size 1e+12: expected .* --pixel-size of 1e-30 .. 1e9 mm" "$ERR" &&
  ok "the message names --pixel-size and its bounds" || bad "--pixel-size 1e12: $(cat "$ERR")"
exits 3 "--angle-range 1e29" "${FBP[@]}" --angle-range 1e29 --out e.raw
grep -q -- "--angle-range 1e+29: expected values within" "$ERR" &&
  ok "the message names --angle-range" || bad "--angle-range 1e29: $(cat "$ERR")"
# Beyond what float arithmetic holds: refused as usage, before any work (issue 41).
for v in "--voxel 1e300" "--pixel-size 1e-300" "--angle-range 1e308"; do
  exits 2 "$v" "${FBP[@]}" $v --out e.raw
  grep -q -- "${v% *} '${v#* }': expected a number.*1e-30 .. 1e+30" "$ERR" &&
    ok "$v: the message names the option and the range" || bad "$v: $(cat "$ERR")"
done
# Options that would do nothing with the others given: refused, naming them.
# refused DESC TEXT ARGS...: exit 2 and the message holds TEXT.
refused() {
  local desc=$1 text=$2; shift 2
  exits 2 "$desc" "$@"
  grep -q -- "$text" "$ERR" && ok "$desc: the message says '$text'" || bad "$desc: $(cat "$ERR")"
}
refused "--angle-range with --angles" "the angles come from --angles" "${FBP[@]}" --angles angles.txt \
  --angle-range 90 --out e.raw
refused "--stripe-size without --stripe" "--stripe-size applies to --stripe sorting" "${FBP[@]}" --stripe-size 5 --out e.raw
refused "--stripe-level with --stripe sorting" "--stripe-level applies to --stripe wavelet" "${FBP[@]}" \
  --stripe sorting --stripe-level 2 --out e.raw
refused "--stripe-sigma without --stripe" "--stripe-sigma applies to --stripe wavelet" "${FBP[@]}" --stripe-sigma 2 --out e.raw
refused "--stripe-wavelet with --stripe sorting" "--stripe-wavelet applies to --stripe wavelet" "${FBP[@]}" \
  --stripe sorting --stripe-wavelet 3 --out e.raw
refused "--dezinger-size without --dezinger" "--dezinger-size applies to --dezinger" "${FBP[@]}" \
  --dezinger-size 5 --out e.raw
# a bad option value the library finds is blamed on the option, not on the input file
run "${FBP[@]}" --stripe sorting --stripe-size 4 --out e.raw
[ "$rc" -ne 0 ] && grep -q "^ctrecon fbp: error: --stripe-size = 4: expected an odd width" "$ERR" &&
  ok "--stripe-size 4: the message starts with the option" || bad "--stripe-size 4: exit $rc: $(cat "$ERR")"
refused "--center-row with --axis" "--center-row chooses the row .* --axis 40 gives it" "${FBP[@]}" \
  --axis 40 --center-row 2 --out e.raw
exits 2 "--interp cubic" "${FBP[@]}" --interp cubic --out e.raw
exits 1 "output directory missing" "${FBP[@]}" --out nodir/e.raw
[ ! -e e.raw ] && ok "no output after errors" || bad "e.raw exists"
# A blank (all-zero) scan has no rotation axis to find: it "found" 63.5 with exit 0, and
# --stitch-360 then widened the slices. An error naming --axis now, and no output.
python3 -c "
hdr = b'NRRD0004\ntype: float\ndimension: 3\nsizes: 64 90 2\nendian: little\nencoding: raw\n\n'
open('blank.nrrd', 'wb').write(hdr + bytes(4 * 64 * 90 * 2))"
for extra in "" --stitch-360; do
  exits 3 "a blank scan ${extra:-(auto axis)}" fbp --sinograms blank.nrrd --angle-range 360 $extra \
    --out blank.raw --device cpu
  grep -q "no rotation axis can be found" "$ERR" && grep -q -- "--axis BIN" "$ERR" && [ ! -e blank.raw ] &&
    ok "blank ${extra:-scan}: no axis found, --axis named, no output" || bad "blank scan: $(cat "$ERR")"
done
exits 0 "--center-range 40:41" fbp --sinograms pd/sinograms.tif --center-range 40:41 --out cr.raw --device cpu
axis=$(awk '/^rotation axis:/ {print $3}' "$OUT")
awk -v a="$axis" 'BEGIN { exit !(a != "" && a >= 40 && a <= 41) }' &&
  ok "--center-range 40:41: the axis found ($axis) lies in the range" || bad "axis '$axis' outside 40:41"
# Angles in radians given as degrees (--angle-range 3.14159): a warning naming radians and
# --angle-units; --angle-units rad reads them as radians (the slices of --angle-range 180),
# --angle-units deg says they are degrees (no warning). The same for an --angles file.
S=(fbp --sinograms pd/sinograms.tif --axis 47.5 --device cpu)
step "--angle-range 180" "${S[@]}" --angle-range 180 --out a180.raw
step "--angle-range 3.14159" "${S[@]}" --angle-range 3.14159 --out api.raw
grep -q "warning: the 180 angles (--angle-range 3.14159) span only 3.124 degrees: they look like radians.*--angle-units rad.*--angle-units deg" "$ERR" &&
  ok "--angle-range 3.14159 warns of radians, naming --angle-units" || bad "no radians warning: $(cat "$ERR")"
step "--angle-range 3.14159265358979 --angle-units rad" "${S[@]}" --angle-range 3.14159265358979 \
  --angle-units rad --out arad.raw
grep -q "radians" "$ERR" && bad "--angle-units rad warned" || ok "--angle-units rad: no warning"
close_raw a180.raw arad.raw 1e-4 &&
  ok "--angle-units rad: the slices of --angle-range 180" || bad "--angle-units rad slices differ"
step "--angle-units deg" "${S[@]}" --angle-range 3.14159 --angle-units deg --out adeg.raw
grep -q "radians" "$ERR" && bad "--angle-units deg warned" || ok "--angle-units deg: no warning"
python3 -c "
import math
print('\n'.join(repr(math.pi * a / 180) for a in range(180)))" > rad.txt
step "--angles in radians" "${S[@]}" --angles rad.txt --out afile.raw
grep -q "warning: the 180 angles (--angles 'rad.txt') span only 3.124 degrees: they look like radians" "$ERR" &&
  ok "an --angles file in radians warns" || bad "--angles radians: $(cat "$ERR")"
exits 2 "--angle-units grad" "${S[@]}" --angle-units grad --out x.raw
grep -q -- "--angle-units 'grad': expected deg or rad" "$ERR" && ok "bad --angle-units named" || bad "grad: $(cat "$ERR")"
# --input-scale, as in fdk and iterate: uint16 sinograms stored as value x 900 reconstruct as the
# float32 ones (fbp had no input scale), the scale stated in the summary; refused for projections.
python3 -c "
import math, struct
nb, na, ns = 64, 90, 2
v = [2 * math.sqrt(max(0.0, 20.0 ** 2 - (b - 31.5) ** 2)) * 0.05 for b in range(nb)] * (na * ns)
def nrrd(name, kind, data):
    hdr = 'NRRD0004\ntype: %s\ndimension: 3\nsizes: %d %d %d\nendian: little\nencoding: raw\n\n' % (kind, nb, na, ns)
    open(name, 'wb').write(hdr.encode() + data)
nrrd('disc.nrrd', 'float', struct.pack('<%df' % len(v), *v))
nrrd('disc16.nrrd', 'ushort', struct.pack('<%dH' % len(v), *[round(x * 900) for x in v]))"
step "fbp float32 sinograms" fbp --sinograms disc.nrrd --axis 31.5 --out d32.raw --device cpu
step "fbp uint16 sinograms --input-scale 900" fbp --sinograms disc16.nrrd --axis 31.5 --input-scale 900 \
  --out d16.raw --device cpu
grep -q "(input scale 900)" "$OUT" && ok "the summary states the input scale" || bad "no input scale: $(cat "$OUT")"
close_raw d32.raw d16.raw 0.01 && ok "uint16 / 900 reconstructs as the float32 sinograms" ||
  bad "--input-scale 900 differs"
exits 2 "--input-scale with --projections" "${PP[@]}" --input-scale 900 --out x.raw
grep -q -- "--input-scale applies to --sinograms" "$ERR" && ok "the refusal names --sinograms" ||
  bad "--input-scale projections: $(cat "$ERR")"
finish
