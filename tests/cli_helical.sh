#!/usr/bin/env bash
# `ctrecon geometry --pitch` (docs/geometry.md, "Helical orbits") and `ctrecon
# fdk` end to end: a helix written, checked and read back; a long phantom's
# exact projections on it reconstructed by helical FDK within a bound of the
# truth (slices far from the helix's ends); a pitch beyond FDK's limit refused
# naming --pitch; the helix's options refused where they do not apply.
# Usage: bash cli_helical.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"

# sid 200, sdd 400, 24 rows of 0.8 mm: 9.6 mm tall at the axis; pitch 4.8 mm
# (0.5 of it), 2.8 turns of 180 views, the volume's 12 slices in the middle
G="--sid 200 --sdd 400 --nu 72 --nv 24 --du 0.8 --dv 0.8 --volume 48,48,12 --voxel 0.5"
step "helical geometry" geometry --out helix.json $G --views 505 --angle-range 1010 \
  --pitch 4.8 --z0 -6.75
grep -q '"type":[[:space:]]*"helical"' helix.json && grep -q '"pitch_mm":[[:space:]]*4.8' helix.json &&
  ok "written as type helical with its pitch" || bad "helical JSON: $(head -c 300 helix.json)"
step "check reads it back" geometry --check helix.json
grep -q "helical cone-beam geometry" "$OUT" && grep -q "pitch 4.8 mm a turn (0.500" "$OUT" &&
  ok "summary: helical, pitch 0.5 of the detector's height" || bad "summary: $(cat "$OUT")"

# a long body (a cylinder-like ellipsoid 140 mm long) with two inserts
cat >long.json <<'JSON'
{"ellipsoids": [
  {"density": 1.0, "center_mm": [0, 0, 0], "semi_axes_mm": [9, 8, 70]},
  {"density": 0.5, "center_mm": [3, 0, 1], "semi_axes_mm": [2, 2, 2]},
  {"density": -0.5, "center_mm": [-3, 2, -1.5], "semi_axes_mm": [1.5, 1.5, 3]}
]}
JSON
step "phantom on the helix" phantom --geometry helix.json --phantom long.json --out p.raw \
  --truth t.raw
step "helical fdk" fdk --geometry helix.json --projections p.raw --out v.raw
python3 - <<'PY' && ok "helical FDK within 0.08 RMSE of the truth (contrast 1)" || bad "helical FDK error"
import array, math, sys
v, t = array.array("f", open("v.raw", "rb").read()), array.array("f", open("t.raw", "rb").read())
assert len(v) == len(t) == 48 * 48 * 12, (len(v), len(t))
e = math.sqrt(sum((a - b) ** 2 for a, b in zip(v, t)) / len(v))
print("helical FDK RMSE", round(e, 4))
sys.exit(0 if e < 0.08 else 1)
PY

# pitch 9.6 (1.0 of the height): the default window is the widest that fits, 0 degrees
step "a steep helix" geometry --out steep.json $G --views 300 --angle-range 600 --pitch 9.6 \
  --z0 -8
grep -q "fdk's window 0 deg (automatic" "$OUT" && ok "summary: the automatic window, 0 deg" ||
  bad "steep summary: $(cat "$OUT")"
! grep -q "window_deg" steep.json && ok "the automatic window is not written" ||
  bad "steep JSON: $(cat steep.json)"
step "its projections" phantom --geometry steep.json --phantom long.json --out ps.raw
step "fdk picks the window a pitch of 1.0 allows" fdk --geometry steep.json --projections ps.raw \
  --out vs.raw
grep -q "window_deg not set: using 0 degrees" "$ERR" && ok "and says so" ||
  bad "steep helix log: $(cat "$ERR")"
# a window given explicitly that the pitch does not allow, and a pitch above the height
step "an explicit window" geometry --out steep10.json $G --views 300 --angle-range 600 \
  --pitch 9.6 --z0 -8 --helix-window 10 --quiet
exits 3 "fdk refuses a window beyond the pitch's limit" fdk --geometry steep10.json \
  --projections ps.raw --out v10.raw
grep -q -- "--pitch" "$ERR" && grep -q "at most 9.095" "$ERR" && ! grep -q "warning" "$ERR" &&
  ok "names --pitch and the limit" || bad "steep helix message: $(cat "$ERR")"
[ ! -e v10.raw ] && ok "nothing written" || bad "a volume was written"
step "a helix above the detector's height" geometry --out steeper.json $G --views 300 \
  --angle-range 600 --pitch 9.7 --z0 -8 --quiet
exits 3 "fdk refuses a pitch above the height" fdk --geometry steeper.json --projections ps.raw \
  --out v97.raw
grep -q "at most 9.6 mm" "$ERR" && grep -q "window narrowed to 0" "$ERR" &&
  ok "names the limit with window 0" || bad "steeper message: $(cat "$ERR")"
exits 2 "a negative window" geometry --out n.json $G --pitch 4 --helix-window -1

# a helix over a cylindrical detector: written, read back, reconstructed
step "curved helix" geometry --out curved.json $G --views 505 --angle-range 1010 \
  --pitch 4.8 --z0 -6.75 --detector cylindrical
grep -q '"shape":[[:space:]]*"cylindrical"' curved.json && ok "written with its shape" ||
  bad "curved helix JSON: $(head -c 400 curved.json)"
step "its summary" geometry --check curved.json
grep -q "helical cone-beam geometry, cylindrical (curved) detector" "$OUT" &&
  ok "summary: helical, cylindrical" || bad "curved summary: $(cat "$OUT")"
step "phantom on the curved helix" phantom --geometry curved.json --phantom long.json \
  --out pc.raw
step "fdk on the curved helix" fdk --geometry curved.json --projections pc.raw --out vc.raw
python3 - <<'PY' && ok "curved helical FDK within 0.08 RMSE of the truth" || bad "curved FDK error"
import array, math, sys
v, t = array.array("f", open("vc.raw", "rb").read()), array.array("f", open("t.raw", "rb").read())
e = math.sqrt(sum((a - b) ** 2 for a, b in zip(v, t)) / len(v))
print("curved helical FDK RMSE", round(e, 4))
sys.exit(0 if e < 0.08 else 1)
PY

exits 2 "--pitch 0 (a circle)" geometry --out z.json $G --pitch 0 --z0 1
exits 2 "helix options with --from-vectors" geometry --out o.json --from-vectors long.json \
  --nu 8 --nv 8 --pitch 3
exits 2 "helix options with --check" geometry --check helix.json --pitch 3
exits 3 "a window beyond 90 degrees" geometry --out w.json $G --pitch 4 --helix-window 100
grep -q -- "--helix-window" "$ERR" && ok "names --helix-window" || bad "window message: $(cat "$ERR")"
[ ! -e z.json ] && [ ! -e o.json ] && [ ! -e w.json ] && [ ! -e n.json ] && ok "nothing written on errors" ||
  bad "an output was written on error"
finish
