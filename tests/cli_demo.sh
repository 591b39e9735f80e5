#!/usr/bin/env bash
# A small `ctrecon demo` end to end: summary, accuracy, files.
# Usage: bash cli_demo.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"
# value LABEL: the first number after LABEL in the summary
value() { awk -v l="$1" 'index($0, l) == 3 { s = substr($0, length(l) + 3); split(s, f, " "); print f[1]; exit }' "$OUT"; }
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 < b + 0) }'; }

echo "# demo --size 48 --views 60 --det 64 --out-dir X/nested (created)"
run demo --size 48 --views 60 --det 64 --out-dir X/nested
if [ "$rc" -eq 0 ] && [ ! -s "$ERR" ]; then ok "demo exits 0, nothing on stderr"; else bad "demo: exit $rc"; fi
sed 's/^/    | /' "$OUT"
grep -Eq '^using (cpu|cuda:[0-9]+)' "$OUT" && ok "backend reported" || bad "backend not reported"
for label in "RMSE away from edges" "RMSE over the object" "max error" "FDK"; do
  grep -q "^  $label " "$OUT" && ok "summary has '$label'" || bad "summary lacks '$label'"
done
grep -Eq '^  FDK +[0-9.]+ s, [0-9.]+ GUPS' "$OUT" && ok "FDK seconds and GUPS" || bad "FDK line"
flat=$(value "RMSE away from edges")
obj=$(value "RMSE over the object")
# The brain is 0.2, its details 0.01 - 0.02 above it: the flat regions must
# come back within a small fraction of that.
below "$flat" 0.01 && ok "RMSE away from edges $flat < 0.01" || bad "RMSE away from edges '$flat'"
below "$obj" 0.2 && ok "RMSE over the object $obj < 0.2" || bad "RMSE over the object '$obj'"
for f in geometry.json recon.nrrd recon_xy.png recon_xz.png recon_yz.png truth_xy.png truth_xz.png truth_yz.png; do
  if [ -s "X/nested/$f" ]; then ok "X/nested/$f written"; else bad "X/nested/$f missing"; fi
done
head -c 8 X/nested/recon_xy.png | grep -q PNG && ok "previews are PNG" || bad "recon_xy.png is not a PNG"
grep -aq 'sizes: 48 48 48' X/nested/recon.nrrd && ok "recon.nrrd is 48^3" || bad "recon.nrrd sizes"
run geometry --check X/nested/geometry.json
grep -q '60 over 360.0 deg' "$OUT" && grep -q '64 x 64 pixels of 7 x 7 mm' "$OUT" &&
  grep -q '48 x 48 x 48 voxels' "$OUT" && grep -q '100.0 %' "$OUT" &&
  ok "demo geometry: 60 views, 64 px of 7 mm, 48^3, full coverage" || bad "demo geometry"
leftover=$(find . -name '*.tmp.*' -o -name '*partial*')
[ -z "$leftover" ] && ok "no temporaries" || bad "temporaries: $leftover"

echo "# --no-volume, --quiet"
run demo --size 32 --views 40 --det 48 --out-dir Y --no-volume --quiet --threads 1
if [ "$rc" -eq 0 ] && [ ! -s "$OUT" ] && [ ! -s "$ERR" ]; then ok "--quiet prints nothing"; else bad "--quiet: exit $rc"; fi
[ ! -e Y/recon.nrrd ] && [ -s Y/recon_xy.png ] && ok "--no-volume: previews only" || bad "--no-volume"

echo "# twice into one --out-dir: refused, then replaced with --force (make demo's way)"
cp Y/recon_xy.png first_xy.png
run demo --size 32 --views 40 --det 48 --out-dir Y --no-volume --quiet --threads 1 --interp precise
[ "$rc" -eq 2 ] && grep -qF -- "holds the files of an earlier run of demo" "$ERR" &&
  grep -qF -- "--force" "$ERR" && cmp -s Y/recon_xy.png first_xy.png &&
  ok "a second demo into Y: refused, naming --force, the files kept" || bad "second demo: exit $rc"
for i in 1 2; do
  run demo --size 32 --views 40 --det 48 --out-dir Y --no-volume --quiet --threads 1 --force
  [ "$rc" -eq 0 ] && ok "demo --force, run $i" || bad "demo --force, run $i: exit $rc $(cat "$ERR")"
done
leftover=$(find . -name '*.tmp.*' -o -name '*partial*')
[ -z "$leftover" ] && ok "no temporaries after --force" || bad "temporaries: $leftover"

echo "# unusable --out-dir"
touch afile
run demo --size 32 --views 40 --det 48 --out-dir afile/sub
[ "$rc" -eq 1 ] && [ "$(wc -l <"$ERR")" -eq 1 ] && grep -q "^ctrecon demo: error: .*afile" "$ERR" &&
  ok "out-dir under a file: exit 1, $(cat "$ERR")" || bad "out-dir under a file: exit $rc"

finish
