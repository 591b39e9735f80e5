#!/usr/bin/env bash
# `ctrecon pet simulate | recon | metrics` on a tiny case (48 x 48 x 8 voxels,
# 8 views): help, determinism of the simulation, a 2-iteration reconstruction
# on the CPU with per-iteration images, CRC/noise CSV and plot, metrics from
# NRRD and raw images agreeing with the CSV, and the errors (exit 2 for
# options, 3 for malformed data, 1 for missing files), each one line naming
# the option or file, with nothing left behind.
# Usage: bash cli_pet.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"
listing() { find . | LC_ALL=C sort; }
# fails CODE DESC "NEEDLE1|NEEDLE2" ARGS...: exit CODE, one error line
# "ctrecon pet ...: error:" holding every needle, the directory unchanged.
fails() {
  local want=$1 desc=$2 needles=$3; shift 3
  local before after why="" n
  before=$(listing)
  run "$@"
  after=$(listing)
  [ "$rc" -eq "$want" ] || why="$why exit $rc (expected $want);"
  [ "$(wc -l <"$ERR")" -eq 1 ] || why="$why $(wc -l <"$ERR") stderr lines;"
  grep -q "^ctrecon pet[a-z ]*: error: " "$ERR" || why="$why no 'ctrecon pet ...: error:' prefix;"
  IFS='|' read -ra n <<<"$needles"
  for needle in "${n[@]}"; do grep -qF -- "$needle" "$ERR" || why="$why no '$needle';"; done
  [ "$before" = "$after" ] || why="$why files changed: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | tr '\n' ' ');"
  if [ -z "$why" ]; then ok "$desc (exit $rc): $(cat "$ERR")"; else bad "$desc:$why"; fi
}
is_png() { head -c 8 "$1" | grep -q PNG; }

echo "# help"
for sub in "" simulate recon metrics; do
  run pet $sub --help
  if [ "$rc" -eq 0 ] && grep -q "^usage: ctrecon pet" "$OUT"; then ok "pet $sub --help"; else bad "pet $sub --help: exit $rc"; fi
done
run help pet
[ "$rc" -eq 0 ] && grep -q "simulate" "$OUT" && ok "help pet" || bad "help pet"
run --help
grep -q "^  pet " "$OUT" && ok "pet in the global help" || bad "pet missing from the global help"
run demo --help
grep -q -- "--pet" "$OUT" && ok "demo --help lists --pet" || bad "demo --help lacks --pet"

echo "# simulate"
SIM=(pet simulate --lattice 48x48x8 --views 8x1 --events 4e5 --device cpu)
step "simulate a tiny data set" "${SIM[@]}" --out d.json --seed 3
grep -q "deposited" "$OUT" && ok "simulate summary" || bad "simulate summary"
[ "$(wc -c < d.counts.raw)" -eq $((48 * 48 * 8 * 8 * 4)) ] && ok "d.counts.raw holds 8 views of 48x48x8 float32" ||
  bad "d.counts.raw size $(wc -c < d.counts.raw)"
step "the same seed again" "${SIM[@]}" --out d2.json --seed 3 --quiet
[ ! -s "$OUT" ] && ok "--quiet prints nothing" || bad "--quiet printed: $(head -1 "$OUT")"
cmp -s d.counts.raw d2.counts.raw && ok "same seed, same histo-images" || bad "same seed gave different data"
step "another seed" "${SIM[@]}" --out d3.json --seed 4 --quiet
cmp -s d.counts.raw d3.counts.raw && bad "seeds 3 and 4 gave the same data" || ok "another seed, other data"
step "simulate with attenuation" "${SIM[@]}" --out da.json --attenuation --quiet
[ -s da.factors.raw ] && ok "attenuation factors written" || bad "da.factors.raw missing"

echo "# recon"
REC=(pet recon --data d.json --iterations 2 --device cpu)
step "recon, 2 RAMLA iterations" "${REC[@]}" --out img.nrrd --every 1 --metrics crc.csv --plot crc.png \
  --preview prev --timings
grep -q "^iteration   2: CRC" "$OUT" && ok "per-iteration CRC/noise printed" || bad "no per-iteration line"
grep -q "^timings (s): " "$OUT" && ok "--timings" || bad "no timings"
grep -aq "sizes: 48 48 8" img.nrrd && grep -aq "space directions: (4,0,0) (0,4,0) (0,0,4)" img.nrrd &&
  ok "img.nrrd is 48x48x8 of 4 mm" || bad "img.nrrd header"
[ -s img_iter001.nrrd ] && [ -s img_iter002.nrrd ] && ok "per-iteration images" || bad "per-iteration images missing"
cmp -s img.nrrd img_iter002.nrrd && ok "the last per-iteration image is the result" || bad "img_iter002 differs from img.nrrd"
cmp -s img_iter001.nrrd img_iter002.nrrd && bad "iterations 1 and 2 are identical" || ok "iteration 2 changed the image"
head -1 crc.csv | grep -qx "iteration,noise,crc,crc_sphere1,crc_sphere2,crc_sphere3,crc_sphere4,crc_sphere5,crc_sphere6" &&
  ok "CSV header" || bad "CSV header: $(head -1 crc.csv)"
awk -F, 'NR > 1 { n++; if (NF != 9 || $1 != n || !($2 > 0)) bad = 1; m = 0; for (i = 4; i <= 9; i++) m += $i;
  if ((m / 6 - $3) ^ 2 > 1e-12) bad = 1 } END { exit bad || n != 2 }' crc.csv &&
  ok "CSV: 2 iterations, noise > 0, crc = mean of the spheres" || bad "CSV rows: $(cat crc.csv)"
is_png crc.png && ok "crc.png" || bad "crc.png is not a PNG"
for s in xy xz yz; do is_png "prev_$s.png" && ok "prev_$s.png" || bad "prev_$s.png"; done
step "recon to raw, OSEM, given kernels" "${REC[@]}" --out img.raw --algorithm osem --tof-ps 500 \
  --radial-fwhm 5.8:8 --asymmetric --quiet
[ "$(wc -c < img.raw)" -eq $((48 * 48 * 8 * 4)) ] && ok "img.raw size" || bad "img.raw size"
printf 'radius_mm,fwhm_mm\n# a comment\n0, 5.8\n60 7\n120,9\n' > table.csv
step "recon with --radial-table" "${REC[@]}" --out imt.nrrd --radial-table table.csv --iterations 1
grep -q "radial from 'table.csv' (3 points)" "$OUT" && ok "table read (3 points)" || bad "table not reported"

step "recon of attenuated data (with factors)" "${REC[@]}" --data da.json --out ia.nrrd --iterations 1 --quiet
[ -s ia.nrrd ] && ok "ia.nrrd written" || bad "ia.nrrd missing"
step "simulate from a voxel activity file" "${SIM[@]}" --out dv.json --activity img.raw
grep -q "of the img.raw" "$OUT" && ok "the activity file was used" || bad "activity not reported"
if "$CTR" info | grep -Eq '^ +hdf5 +yes'; then
  step "simulate to HDF5" "${SIM[@]}" --out d.h5 --seed 3 --quiet
  step "recon from HDF5" "${REC[@]}" --data d.h5 --out img5.nrrd --iterations 2 --quiet
  cmp -s img.nrrd img5.nrrd && ok "HDF5 and JSON data give the same image" || bad "HDF5 image differs"
else
  ok "HDF5 not built: skipped"
fi

echo "# metrics"
step "metrics of the NRRD image" pet metrics --image img.nrrd
[ "$(grep -cE '^ +[1-6] ' "$OUT")" -eq 6 ] && ok "six spheres listed" || bad "sphere lines"
crc_file=$(awk '/^mean CRC/ { print $3 }' "$OUT")
crc_csv=$(awk -F, 'NR == 3 { printf "%.4f", $3 }' crc.csv)
[ -n "$crc_file" ] && [ "$crc_file" = "$crc_csv" ] && ok "metrics = CSV's last row ($crc_file)" ||
  bad "metrics CRC '$crc_file', CSV '$crc_csv'"
grep -q "^noise [0-9.]* %" "$OUT" && ok "noise printed" || bad "noise line"
step "metrics of a raw image" pet metrics --image img.raw --lattice 48x48x8 --voxel 4
step "metrics of a raw copy of img.nrrd" pet metrics --image img.nrrd --contrast 4
tail -c $((48 * 48 * 8 * 4)) img.nrrd > copy.raw
run pet metrics --image copy.raw --lattice 48x48x8 --voxel 4
[ "$rc" -eq 0 ] && [ "$(awk '/^mean CRC/ { print $3 }' "$OUT")" = "$crc_file" ] &&
  ok "raw and NRRD give the same CRC" || bad "raw copy: exit $rc, $(grep 'mean CRC' "$OUT")"

echo "# errors"
fails 2 "no subcommand" "subcommand" pet
fails 2 "unknown subcommand" "frobnicate" pet frobnicate
fails 2 "simulate without --out" "--out" pet simulate --lattice 48x48x8
fails 2 "--lattice with two sizes" "--lattice|NXxNYxNZ" "${SIM[@]}" --out e.json --lattice 48x48
fails 2 "--views 0x3" "--views" "${SIM[@]}" --out e.json --views 0x3
fails 2 "--events -5" "--events" "${SIM[@]}" --out e.json --events -5
fails 2 "--radial-fwhm 5:abc" "--radial-fwhm" "${SIM[@]}" --out e.json --radial-fwhm 5:abc
fails 2 "--out with another extension" "--out|.json" "${SIM[@]}" --out e.txt
fails 2 "--phantom cube" "--phantom" "${SIM[@]}" --out e.json --phantom cube
head -c 1000 d.counts.raw > small.raw
fails 3 "--activity of the wrong size" "small.raw" "${SIM[@]}" --out e.json --activity small.raw
# Voxel (0, 0, 0) = -1.0f: the message names the voxel and its value (read
# before the data are freed; a sanitized build fails on a read after free).
{ printf '\000\000\200\277'; tail -c +5 img.raw; } > negative.raw
fails 3 "--activity with a negative voxel" "negative.raw|voxel (0, 0, 0) is -1|expected finite" \
  "${SIM[@]}" --out e.json --activity negative.raw
fails 2 "recon without --data" "--data" pet recon --out e.nrrd
fails 2 "--algorithm sart" "--algorithm" "${REC[@]}" --out e.nrrd --algorithm sart
fails 2 "--iterations 0" "--iterations" "${REC[@]}" --out e.nrrd --iterations 0
fails 2 "--relax 0" "--relax" "${REC[@]}" --out e.nrrd --relax 0
fails 2 "--iter-prefix without --every" "--every" "${REC[@]}" --out e.nrrd --iter-prefix p
fails 2 "--out with an unknown extension" "--out" "${REC[@]}" --out e.xyz
fails 1 "missing data file" "nope.json" pet recon --data nope.json --out e.nrrd
fails 1 "output directory missing" "nodir" "${REC[@]}" --out nodir/e.nrrd
echo '{"format": "ctrecon-pet-histo", "lattice' > broken.json
fails 3 "malformed JSON" "broken.json" pet recon --data broken.json --out e.nrrd
sed 's/"nviews":[[:space:]]*8/"nviews": 9/' d.json > views9.json
fails 3 "inconsistent view count" "views9.json|nviews" pet recon --data views9.json --out e.nrrd
sed 's/d\.counts\.raw/short.counts.raw/' d.json > short.json
head -c 5000 d.counts.raw > short.counts.raw
fails 3 "truncated counts" "short.json|truncated" pet recon --data short.json --out e.nrrd
printf '0,5.8\n100,9\n50,7\n' > desc.csv
fails 3 "radial table not ascending" "desc.csv|line 3" "${REC[@]}" --out e.nrrd --radial-table desc.csv
printf '0,5.8\n100,x\n' > nan.csv
fails 3 "radial table with a word" "nan.csv|line 2" "${REC[@]}" --out e.nrrd --radial-table nan.csv
fails 2 "metrics without --image" "--image" pet metrics
fails 2 "metrics of raw without --lattice" "--lattice" pet metrics --image img.raw
fails 3 "metrics with the wrong --lattice" "img.raw" pet metrics --image img.raw --lattice 40x40x8 --voxel 4
fails 2 "metrics --phantom points" "--phantom" pet metrics --image img.nrrd --phantom points
fails 1 "metrics of a missing image" "none.nrrd" pet metrics --image none.nrrd
ls e.* >/dev/null 2>&1 && bad "error runs left e.* behind" || ok "no output after errors"
finish
