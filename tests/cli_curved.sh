#!/usr/bin/env bash
# `ctrecon geometry --detector cylindrical` (docs/geometry.md, "Curved
# (cylindrical) detectors"): the file records the shape, --check reads it
# back and says so; the phantom's exact projections and FDK run on it (a
# streamed run: the same volume as the in-memory one of the C tests, whose
# accuracy test_curved checks) and so do the iterative solvers (CGLS
# against the flat detector's); a bad shape, cone_vec rows of a curved
# detector and the iterative fast pair are refused with what to use instead.
# Usage: bash cli_curved.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"

G="--nu 64 --nv 48 --du 7 --dv 7 --views 90 --volume 48 --voxel 4"
step "curved geometry" geometry --out curved.json --detector cylindrical $G
grep -q '"shape":[[:space:]]*"cylindrical"' curved.json && ok "the file records the shape" ||
  bad "no detector.shape in $(head -c 300 curved.json)"
grep -q "cylindrical (curved) detector" "$OUT" && ok "the summary names the detector" ||
  bad "summary"
step "flat geometry" geometry --out flat.json $G --quiet
grep -q '"shape"' flat.json && bad "a flat file names a shape" || ok "a flat file is as before"
step "check reads it back" geometry --check curved.json
grep -q "cylindrical (curved) detector" "$OUT" && ok "--check names the detector" || bad "check"
# the arc's fan: 64 columns x 7 mm at 1500 mm = 0.2987 rad = 17.1 deg (flat: 2 atan(224/1500) = 17.0)
grep -q "fan            17.1 deg" "$OUT" && ok "the fan of the arc" || bad "fan of the arc"
exits 2 "an unknown shape" geometry --out bad.json --detector curved $G
grep -q "expected flat or cylindrical" "$ERR" && ok "names the choices" || bad "shape message"
exits 2 "cone_vec rows of a curved detector" geometry --check curved.json --vectors-out v.txt
grep -q "cylindrical (curved) detector has no cone_vec rows" "$ERR" && ok "says why" ||
  bad "--vectors-out message"
exits 2 "--vectors-out while writing a curved detector" geometry --out w.json --detector \
  cylindrical $G --vectors-out w.txt
[ ! -e w.json ] && [ ! -e w.txt ] && ok "refused before writing anything" || bad "w.json written"
exits 2 "--detector with --from-vectors" geometry --out x.json --from-vectors v.txt --detector \
  cylindrical --nu 8 --nv 8
step "phantom" phantom --geometry curved.json --out p.raw
step "fdk" fdk --geometry curved.json --projections p.raw --out v.raw --window hann
[ -s v.raw ] && ok "a volume" || bad "no volume"
# the iterative solvers: CGLS of the exact curved projections reaches the
# error of the flat detector's (flat.json: about the same fan, the same rows)
# (measured 0.388 and 0.386 after 8 iterations)
step "phantom truth" phantom --geometry curved.json --out pt.raw --truth truth.raw --quiet
step "iterate on the curved detector" iterate --geometry curved.json --projections p.raw \
  --out it.raw --algorithm cgls --iterations 8 --truth truth.raw
ec=$(sed -n 's/^iteration *8\/8:.*error \([0-9.]*\).*/\1/p' "$OUT")
step "flat projections" phantom --geometry flat.json --out pf.raw --quiet
step "iterate on the flat detector" iterate --geometry flat.json --projections pf.raw \
  --out itf.raw --algorithm cgls --iterations 8 --truth truth.raw
ef=$(sed -n 's/^iteration *8\/8:.*error \([0-9.]*\).*/\1/p' "$OUT")
awk -v c="$ec" -v f="$ef" 'BEGIN { exit !(c != "" && f != "" && c < 0.45 && c <= 1.1 * f) }' &&
  ok "curved CGLS error $ec, flat $ef" || bad "curved CGLS error '$ec', flat '$ef'"
exits 4 "the fast pair on a curved detector" iterate --geometry curved.json --projections p.raw \
  --out fast.raw --pair fast --iterations 1
grep -q "^ctrecon iterate: error: --pair fast: .*(--pair matched)" "$ERR" &&
  ok "names --pair and the matched pair" || bad "--pair fast message"
clean "the refused iterate"
finish
