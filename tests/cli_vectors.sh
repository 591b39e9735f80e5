#!/usr/bin/env bash
# `ctrecon geometry --from-vectors`: ASTRA cone_vec rows (docs/geometry.md,
# "Vector geometries") from a text file. The circular orbit written as such
# rows gives a "vectors" file whose phantom projections and FDK volume are
# byte for byte those of the circular file; bad lines and bad views are
# refused naming the file and line or the view; the orbit's options are
# refused with --from-vectors; --check reads the file back.
# Usage: bash cli_vectors.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"

G="--nu 48 --nv 40 --du 9 --dv 12 --views 30 --angle-start 15 --volume 32 --voxel 8"
step "circular geometry" geometry --out circ.json --sid 1000 --sdd 1500 $G --quiet
# the same orbit as cone_vec rows (docs/geometry.md's formulas for a circular
# orbit: t = angle, src = sid (cos t, sin t, 0), detector centre (sid - sdd)
# (cos t, sin t, 0), u = du (-sin t, cos t, 0), v = (0, 0, dv))
awk 'BEGIN { pi = 3.14159265358979323846; print "# srcX srcY srcZ dX dY dZ uX uY uZ vX vY vZ"
  for (i = 0; i < 30; i++) { t = (15 + i * 360 / 30) * pi / 180; c = cos(t); s = sin(t)
    printf "%.17g %.17g 0, %.17g %.17g 0, %.17g %.17g 0, 0 0 12\n",
      1000 * c, 1000 * s, -500 * c, -500 * s, -9 * s, 9 * c } }' >views.txt
step "vectors geometry" geometry --out vec.json --from-vectors views.txt --nu 48 --nv 40 \
  --volume 32 --voxel 8
grep -q '"type":[[:space:]]*"vectors"' vec.json && ok "written as type vectors" ||
  bad "written as type vectors: $(head -c 200 vec.json)"
step "check reads it back" geometry --check vec.json
grep -q "views          30 over 360.0 deg" "$OUT" && ok "30 views over 360 deg" || bad "summary"
step "phantom, circular" phantom --geometry circ.json --out pc.raw
step "phantom, vectors" phantom --geometry vec.json --out pv.raw
step "fdk, circular" fdk --geometry circ.json --projections pc.raw --out vc.raw
step "fdk, vectors" fdk --geometry vec.json --projections pc.raw --out vv.raw
# awk's cos/sin are the C library's, so the rows are the circular orbit's bits
# and the orbit is recognised (the same matrices); otherwise equal to ~1e-7
if cmp -s pc.raw pv.raw && cmp -s vc.raw vv.raw; then
  ok "projections and FDK volume: the same bytes"
else
  python3 - <<'PY' 2>/dev/null && ok "the same to 1e-5 (another libm: not recognised)" || bad "vectors differ from circular"
import array, sys
for a, b in (("pc.raw", "pv.raw"), ("vc.raw", "vv.raw")):
    x, y = array.array("f", open(a, "rb").read()), array.array("f", open(b, "rb").read())
    m = max(abs(v) for v in x) or 1
    sys.exit(1) if len(x) != len(y) or max(abs(p - q) for p, q in zip(x, y)) > 1e-5 * m else None
PY
fi

# --vectors-out: the rows of a circular orbit, read back, give the same
# vectors (and so the same geometry), bit for bit (%.17g); no clobber
step "vectors out" geometry --check circ.json --vectors-out out1.txt
step "vectors in" geometry --out back.json --from-vectors out1.txt --nu 48 --nv 40 --volume 32 --voxel 8 --quiet
step "vectors out again" geometry --check back.json --vectors-out out2.txt
cmp -s out1.txt out2.txt && ok "--vectors-out rows read back by --from-vectors: the same rows" ||
  bad "--vectors-out round trip differs"
[ "$(grep -vc "^#" out1.txt)" -eq 30 ] &&
  ok "one row per view" || bad "--vectors-out: not one row per view"
exits 2 "--vectors-out refuses an existing file" geometry --check circ.json --vectors-out out1.txt
step "--vectors-out --force replaces it" geometry --check circ.json --vectors-out out1.txt --force

printf '1 2 3 4 5 6 7 8 9 10 11\n' >short.txt
exits 2 "a short line" geometry --out s.json --from-vectors short.txt --nu 8 --nv 8
grep -q "short.txt:1: expected 12 numbers" "$ERR" && ok "names the file and line" || bad "short line message"
printf '# nothing\n\n' >empty.txt
exits 2 "no views" geometry --out e.json --from-vectors empty.txt --nu 8 --nv 8
printf '1000 0 0 -500 0 0 0 0 0 0 0 12\n' >zero.txt
exits 3 "a zero u" geometry --out z.json --from-vectors zero.txt --nu 8 --nv 8
grep -q "view 0: u = (0, 0, 0) is zero" "$ERR" && ok "names the view and u" || bad "zero u message"
exits 2 "orbit options refused" geometry --out o.json --from-vectors views.txt --sid 900
exits 2 "a missing file" geometry --out m.json --from-vectors missing.txt
[ ! -e s.json ] && [ ! -e z.json ] && [ ! -e o.json ] && ok "nothing written on errors" ||
  bad "an output was written on error"
finish
