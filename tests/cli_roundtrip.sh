#!/usr/bin/env bash
# phantom -> fdk round trips through every file format, float32 and uint16
# (with --uint16-scale / --input-scale), slabs, previews and truth volumes.
# Usage: bash cli_roundtrip.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"
# step DESC ARGS...: must exit 0 with nothing on stderr but the backend-free lines
step() {
  local desc=$1; shift
  run "$@"
  if [ "$rc" -eq 0 ] && [ ! -s "$ERR" ]; then ok "$desc"; else bad "$desc: exit $rc"; fi
}
size_of() { if [ -f "$1" ]; then wc -c <"$1" | tr -d ' '; else echo 0; fi; }
# size_is FILE BYTES / size_above FILE BYTES (headers make some formats bigger)
size_is() {
  local s; s=$(size_of "$1")
  if [ "$s" -eq "$2" ]; then ok "$1 is $2 bytes"; else bad "$1 is $s bytes, expected $2"; fi
}
size_above() {
  local s; s=$(size_of "$1")
  if [ "$s" -gt "$2" ]; then ok "$1 exists ($s bytes > $2)"; else bad "$1 is $s bytes, expected > $2"; fi
}
# The reconstruction's maximum, from the summary line "values LO .. HI".
recon_max() { awk '/^values /{print $4}' "$OUT"; }
# close A B TOL: |A - B| <= TOL
close() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'; }

# 48 x 40 pixels of 9 x 12 mm cover the 256 mm cube of 32^3 voxels.
NU=48 NV=40 NVIEWS=30 N=32
step "geometry" geometry --out g.json --nu $NU --nv $NV --du 9 --dv 12 --views $NVIEWS \
  --volume $N --voxel 8 --quiet
PROJ=$((NU * NV * NVIEWS)) VOX=$((N * N * N))

echo "# float32 through raw, tiff, nrrd, tiff-stack"
step "phantom -> raw float32" phantom --geometry g.json --out p.raw --truth truth.nrrd
grep -q '^projections: 30 views of 48 x 40 pixels, values 0 .. ' "$OUT" &&
  ok "phantom summary: views, detector, range" || bad "phantom summary"
grep -Eq '^using (cpu|cuda:[0-9]+)' "$OUT" && ok "backend reported" || bad "backend not reported"
size_is p.raw $((PROJ * 4))
size_above truth.nrrd $((VOX * 4))
step "fdk raw -> raw" fdk --geometry g.json --projections p.raw --out r.raw
size_is r.raw $((VOX * 4))
grep -Eq '^fdk: 30 views -> 32 x 32 x 32 voxels, ram-lak filter .* s, [0-9.]+ GUPS' "$OUT" &&
  ok "fdk summary: hann by default, seconds, GUPS" || bad "fdk summary"
grep -q 'wrote r.raw' "$OUT" && ok "fdk summary names the output" || bad "fdk summary output path"
REF=$(recon_max)
# The Shepp-Logan skull is 1.0; at 8 mm voxels and a hann window the peak is lower.
awk -v m="$REF" 'BEGIN { exit !(m > 0.4 && m < 1.3) }' && ok "reconstruction peak $REF plausible" ||
  bad "reconstruction peak $REF"
for fmt in tif nrrd; do
  step "phantom -> $fmt float32" phantom --geometry g.json --out "p.$fmt" --quiet
  size_above "p.$fmt" $((PROJ * 4))
  step "fdk $fmt -> $fmt" fdk --geometry g.json --projections "p.$fmt" --out "r.$fmt" --quiet
  size_above "r.$fmt" $((VOX * 4))
done
mkdir views
step "phantom -> tiff-stack" phantom --geometry g.json --out 'views/p_%03d.tif' --quiet
n=$(ls views | wc -l)
[ "$n" -eq $NVIEWS ] && ok "tiff-stack has $n files" || bad "tiff-stack has $n files"
step "fdk tiff-stack -> nrrd" fdk --geometry g.json --projections 'views/p_%03d.tif' --out rs.nrrd
close "$(recon_max)" "$REF" 1e-4 && ok "tiff-stack result equals the raw one" || bad "tiff-stack max $(recon_max) vs $REF"
step "explicit --format/--out-format" fdk --geometry g.json --projections p.raw --format raw \
  --out r_nrrd.bin --out-format nrrd --quiet
head -c 8 r_nrrd.bin | grep -q NRRD && ok "--out-format nrrd with a .bin name" || bad "--out-format ignored"
grep -q 'space origin: (-124,-124,-124)' r.nrrd && ok "NRRD origin = offset - (n-1)/2 voxel" ||
  bad "NRRD origin: $(grep -a 'space origin' r.nrrd)"
grep -q 'space directions: (8,0,0) (0,8,0) (0,0,8)' r.nrrd && ok "NRRD spacing = voxel size" ||
  bad "NRRD spacing: $(grep -a 'space directions' r.nrrd)"

echo "# uint16 with --uint16-scale and --input-scale"
# Line integrals reach ~67 mm here: x 900 stays below 65535.
for fmt in raw tif nrrd; do
  step "phantom -> $fmt uint16" phantom --geometry g.json --out "q.$fmt" --dtype uint16 --uint16-scale 900
  grep -q 'uint16 = value x 900' "$OUT" && ok "summary states the uint16 scale" || bad "uint16 scale not stated"
  if [ "$fmt" = raw ]; then
    size_is q.raw $((PROJ * 2))
    step "fdk raw uint16" fdk --geometry g.json --projections q.raw --raw-dtype uint16 --input-scale 900 --out "rq_$fmt.raw"
  else
    size_above "q.$fmt" $((PROJ * 2))
    step "fdk $fmt uint16" fdk --geometry g.json --projections "q.$fmt" --input-scale 900 --out "rq_$fmt.raw"
  fi
  size_is "rq_$fmt.raw" $((VOX * 4))
  # Quantisation to 1/900 changes the result by far less than 1 %.
  close "$(recon_max)" "$REF" 0.005 && ok "uint16 $fmt result matches float32 ($(recon_max) vs $REF)" ||
    bad "uint16 $fmt max $(recon_max) vs $REF"
done
step "fdk without --input-scale is 900 x larger" fdk --geometry g.json --projections q.raw --raw-dtype uint16 --out big.raw
awk -v m="$(recon_max)" -v r="$REF" 'BEGIN { exit !(m > 800 * r && m < 1000 * r) }' &&
  ok "--input-scale divides" || bad "max $(recon_max) without --input-scale"
run phantom --geometry g.json --out clamp.raw --dtype uint16
[ "$rc" -eq 0 ] && grep -q 'warning: .*clamped' "$ERR" && ok "uint16 overflow at the default scale warns" ||
  bad "no clamp warning"
step "raw with a header (--raw-offset)" fdk --geometry g.json --projections q.raw --format raw \
  --raw-dtype uint16 --raw-offset 0 --input-scale 900 --out ro.raw --quiet

echo "# output options"
step "fdk --out-dtype uint16" fdk --geometry g.json --projections p.raw --out r16.raw --out-dtype uint16 --out-scale 2000
size_is r16.raw $((VOX * 2))
grep -q 'uint16 = value x 2000' "$OUT" && ok "summary states --out-scale" || bad "out scale not stated"
step "fdk --slices 8:24" fdk --geometry g.json --projections p.raw --out slab.nrrd --slices 8:24
grep -q '32 x 32 x 16 voxels (slices 8..23 of 32)' "$OUT" && ok "slab summary" || bad "slab summary"
grep -aq 'sizes: 32 32 16' slab.nrrd && ok "slab has 16 slices" || bad "slab sizes"
grep -aq 'space origin: (-124,-124,-60)' slab.nrrd && ok "slab origin starts at slice 8" ||
  bad "slab origin: $(grep -a 'space origin' slab.nrrd)"
step "fdk filters and options" fdk --geometry g.json --projections p.raw --out rf.raw --window ram-lak \
  --cutoff 0.8 --short-scan off --threads 1 --device cpu --quiet
[ ! -s "$OUT" ] && ok "--quiet prints nothing" || bad "--quiet printed"
for w in shepp-logan cosine hamming; do
  step "filter $w" fdk --geometry g.json --projections p.raw --out "rf_$w.raw" --window $w --quiet
done
step "fdk --preview" fdk --geometry g.json --projections p.nrrd --out rp.nrrd --preview prev --preview-window 0:0.5 --quiet
for s in xy xz yz; do size_above "prev_$s.png" 60; done
step "phantom options" phantom --geometry g.json --out ps.raw --radius 100 --scale 0.02 --supersample 2 \
  --truth truth.raw --truth-supersample 1 --quiet
size_is truth.raw $((VOX * 4))
cat >ph.json <<'EOF'
{"ellipsoids": [{"density": 0.02, "center_mm": [0, 0, 0], "semi_axes_mm": [80, 80, 100]},
                {"density": 0.01, "center_mm": [30, 0, 10], "semi_axes_mm": [20, 20, 20]}]}
EOF
step "phantom from a JSON file" phantom --geometry g.json --phantom ph.json --out pj.raw
grep -q 'ph.json (2 ellipsoids)' "$OUT" && ok "JSON phantom summary" || bad "JSON phantom summary"
leftover=$(ls -A | grep -e '\.tmp\.' -e partial)
[ -z "$leftover" ] && ok "no temporaries left" || bad "temporaries left: $leftover"

finish
