#!/usr/bin/env bash
# `ctrecon iterate`: cone and parallel beam, each algorithm's residual per
# iteration, the convergence plot and table, --resume continuing a run bit
# for bit, and usage errors.
# Usage: bash cli_iterate.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"

step "geometry" geometry --out g.json --volume 24 --voxel 2.5 --views 24 --nu 40 --nv 40 --du 2.4 --dv 2.4
step "phantom" phantom --geometry g.json --out proj.nrrd --truth truth.nrrd --device cpu
IT=(iterate --geometry g.json --projections proj.nrrd --device cpu)

# Each algorithm: one line per iteration with its residual, falling.
for alg in sirt cgls os-sart fista-tv pdhg-tv pwls; do
  extra=()
  case $alg in os-sart) extra=(--subsets 4 --nonneg) ;; fista-tv | pdhg-tv) extra=(--tv-weight 0.0005 --nonneg) ;;
    pwls) extra=(--i0 1000 --penalty huber --beta 100 --huber-delta 0.002) ;; esac
  step "iterate --algorithm $alg" "${IT[@]}" --algorithm "$alg" --iterations 4 --out "r_$alg.nrrd" \
    --truth truth.nrrd "${extra[@]}" $([ $alg = sirt ] || echo --checkpoint-every 0)
  n=$(grep -c '^iteration ' "$OUT")
  first=$(awk '/^iteration/ {print $4; exit}' "$OUT")
  last=$(awk '/^iteration/ {v = $4} END {print v}' "$OUT")
  [ "$n" -eq 4 ] && awk -v a="$first" -v b="$last" 'BEGIN { exit !(b + 0 < a + 0) }' &&
    ok "$alg: 4 iterations reported, residual $first -> $last" || bad "$alg: $n lines, $first -> $last"
  grep -q 'error 0\.' "$OUT" && ok "$alg: error against --truth" || bad "$alg: no error column"
  [ ! -e "r_$alg.nrrd.checkpoint" ] && [ ! -e "r_$alg.nrrd.checkpoint.csv" ] &&
    ok "$alg: no checkpoint left after a complete run" || bad "$alg: checkpoint left"
done

# A start volume beyond float arithmetic (3e38 everywhere) made every residual NaN and wrote
# zeros with exit 0; it is under the data policy now: replaced by 0 with a warning (so the run
# equals one from zero), an error naming the file under --strict.
python3 -c "
import struct
n = 24 ** 3
hdr = b'NRRD0004\ntype: float\ndimension: 3\nsizes: 24 24 24\nendian: little\nencoding: raw\n\n'
open('big.nrrd', 'wb').write(hdr + struct.pack('<%df' % n, *([3e38] * n)))"
step "sirt from zero" "${IT[@]}" --algorithm sirt --iterations 2 --out z0.nrrd --checkpoint-every 0
step "sirt --init of 3e38" "${IT[@]}" --algorithm sirt --iterations 2 --init big.nrrd --out zb.nrrd \
  --checkpoint-every 0
grep -q "warning: the initial volume: 13824 values NaN, infinite or beyond" "$ERR" &&
  ok "the bad start values are counted and replaced" || bad "--init 3e38: $(cat "$ERR")"
grep -q "nan" "$OUT" && bad "NaN residuals: $(grep nan "$OUT" | head -2)" || ok "no NaN residual"
same zb.nrrd z0.nrrd "the run equals the run from zero"
exits 3 "--init of 3e38 with --strict" "${IT[@]}" --algorithm cgls --iterations 2 --init big.nrrd \
  --out zs.nrrd --checkpoint-every 0 --strict
grep -q "error: 'big.nrrd': the initial volume: 13824 values" "$ERR" && [ ! -e zs.nrrd ] &&
  ok "--strict: the error names big.nrrd, no output" || bad "--strict --init: $(cat "$ERR")"

# CGLS with the unmatched pair runs, with a warning naming --pair; SIRT does not warn.
step "iterate cgls --pair fast" "${IT[@]}" --algorithm cgls --pair fast --iterations 2 --out rf.nrrd \
  --checkpoint-every 0
grep -q "warning: cgls with the fast (unmatched) pair.*set --pair to matched" "$ERR" &&
  ok "cgls --pair fast warns, naming --pair" || bad "cgls --pair fast: $(cat "$ERR")"
step "iterate sirt --pair fast" "${IT[@]}" --algorithm sirt --pair fast --iterations 2 --out rs.nrrd \
  --checkpoint-every 0
grep -q "unmatched" "$ERR" && bad "sirt --pair fast warns: $(cat "$ERR")" || ok "sirt --pair fast: no warning"

# The plot and the table.
step "iterate --plot --residuals" "${IT[@]}" --algorithm cgls --iterations 5 --out r.nrrd \
  --plot conv.png --residuals res.csv --truth truth.nrrd --quiet --checkpoint-every 0
head -c 8 conv.png | grep -q PNG && ok "conv.png is a PNG" || bad "conv.png"
[ "$(wc -l < res.csv)" -eq 6 ] && head -1 res.csv | grep -q '^iteration,residual,relative_residual,error' &&
  ok "res.csv: header and 5 rows" || bad "res.csv: $(wc -l < res.csv) lines"

# --resume: 3 iterations kept, then continued to 7, equals 7 straight (bit for bit).
# The 3 iterations' volume is there: continuing replaces it, with --force only.
for alg in sirt fista-tv; do
  extra=()
  [ "$alg" = fista-tv ] && extra=(--tv-weight 0.0005 --nonneg)
  part=part-$alg.raw
  step "$alg: 7 iterations" "${IT[@]}" --algorithm $alg --iterations 7 --out full-$alg.raw \
    "${extra[@]}" --quiet
  step "$alg: 3 iterations, checkpoint kept" "${IT[@]}" --algorithm $alg --iterations 3 --out $part \
    --keep-checkpoint "${extra[@]}" --quiet
  [ -s $part.checkpoint ] && ok "$alg: checkpoint kept" || bad "$alg: no checkpoint"
  # the library's resume rule (fdk's and fbp's for their journals): refused,
  # naming --resume and the file to delete, the checkpoint left as it was
  cp $part.checkpoint kept.checkpoint
  exits 3 "$alg: an existing checkpoint without --resume" "${IT[@]}" --algorithm $alg --iterations 7 \
    --out $part "${extra[@]}" --force
  grep -qF "'$part.checkpoint' holds the state of an earlier run: add --resume to continue it, or delete '$part.checkpoint' to start over" "$ERR" &&
    cmp -s $part.checkpoint kept.checkpoint && [ ! -e $part.checkpoint.lock ] &&
    ok "$alg: the refusal names --resume and the checkpoint, which is kept" ||
    bad "$alg: refusal: $(cat "$ERR")"
  exits 2 "$alg: --resume without --force, the 3 iterations' volume there" "${IT[@]}" \
    --algorithm $alg --iterations 7 --out $part --resume "${extra[@]}"
  grep -qF -- "--out: '$part' exists and is kept: add --force" "$ERR" &&
    ok "$alg: the refusal names --out and --force" || bad "$alg: refusal: $(cat "$ERR")"
  step "$alg: --resume --force to 7" "${IT[@]}" --algorithm $alg --iterations 7 --out $part --resume \
    --force --residuals part-$alg.csv "${extra[@]}"
  grep -q 'resumed after iteration 3' "$OUT" && [ "$(grep -c '^iteration ' "$OUT")" -eq 4 ] &&
    ok "$alg: resumed after iteration 3, 4 more" || bad "$alg: resume output"
  cmp -s full-$alg.raw $part && ok "$alg: resumed run is byte-identical" ||
    bad "$alg: resumed run differs"
  [ "$(wc -l < part-$alg.csv)" -eq 8 ] && ok "$alg: the table covers all 7 iterations" ||
    bad "$alg: part-$alg.csv has $(wc -l < part-$alg.csv) lines"
  [ ! -e $part.checkpoint ] && ok "$alg: checkpoint removed" || bad "$alg: checkpoint left"
done
# --resume with other data or another geometry of the same sizes: refused
# (the checkpoint's state belongs to another problem; cgls would even return
# the old data's solution), the checkpoint kept for the right run.
step "geometry of another source distance" geometry --out g2.json --volume 24 --voxel 2.5 --views 24 \
  --nu 40 --nv 40 --du 2.4 --dv 2.4 --sid 800
step "its projections" phantom --geometry g2.json --out proj2.nrrd --device cpu --quiet
step "cgls: 2 iterations, checkpoint kept" "${IT[@]}" --algorithm cgls --iterations 2 --out o.raw \
  --keep-checkpoint --quiet
exits 3 "--resume with other projections" iterate --geometry g.json --projections proj2.nrrd \
  --device cpu --algorithm cgls --iterations 4 --out o.raw --resume --force
grep -q "o.raw.checkpoint' belongs to another run: its projections checksum differs" "$ERR" &&
  ok "the message names the checkpoint and the projections" || bad "other projections: $(cat "$ERR")"
exits 3 "--resume with another geometry" iterate --geometry g2.json --projections proj.nrrd \
  --device cpu --algorithm cgls --iterations 4 --out o.raw --resume --force
grep -q "belongs to another run: its geometry checksum differs" "$ERR" &&
  ok "the message names the geometry" || bad "other geometry: $(cat "$ERR")"
[ -s o.raw.checkpoint ] && ok "the checkpoint kept" || bad "checkpoint lost"
step "--resume with the same data" "${IT[@]}" --algorithm cgls --iterations 4 --out o.raw --resume \
  --force --quiet
# --resume with another --max-slab-slices: the forward sums in another order and the result
# differed in its last bits; refused, naming --max-slab-slices and the checkpoint's value.
step "cgls: 2 iterations in slabs of 8" "${IT[@]}" --algorithm cgls --iterations 2 --out sl.raw \
  --max-slab-slices 8 --keep-checkpoint --quiet
exits 3 "--resume with --max-slab-slices 5" "${IT[@]}" --algorithm cgls --iterations 4 --out sl.raw \
  --max-slab-slices 5 --resume --force
grep -q "made with --max-slab-slices 8" "$ERR" && ok "the message names --max-slab-slices 8" ||
  bad "other slab: $(cat "$ERR")"
step "--resume with --max-slab-slices 8" "${IT[@]}" --algorithm cgls --iterations 4 --out sl.raw \
  --max-slab-slices 8 --resume --force --quiet
exits 1 "--resume without a checkpoint" "${IT[@]}" --iterations 3 --out none.raw --resume
grep -qF "cannot resume: no checkpoint 'none.raw.checkpoint'; run without --resume to start over" "$ERR" &&
  [ ! -e none.raw.checkpoint ] && [ ! -e none.raw ] &&
  ok "--resume without a checkpoint names it and writes nothing" || bad "no checkpoint: $(cat "$ERR")"

# Raw files must hold exactly the sizes expected (as fdk checks): one 40 bytes too long, and
# float32 data read as uint16, ran with exit 0; the same for --init and --truth.
step "raw projections" phantom --geometry g.json --out proj.raw --device cpu --quiet
cp proj.raw long.raw && head -c 40 /dev/zero >> long.raw
exits 3 "raw projections 40 bytes too long" iterate --geometry g.json --projections long.raw \
  --device cpu --iterations 1 --out x.raw --checkpoint-every 0
grep -q -- "--projections: 'long.raw' holds 153640 bytes, expected 153600 for 40 x 40 x 24 float32" "$ERR" &&
  ok "the error names the file, its size and the expected size" || bad "long raw: $(cat "$ERR")"
exits 3 "float32 projections read as uint16" iterate --geometry g.json --projections proj.raw \
  --raw-dtype uint16 --device cpu --iterations 1 --out x.raw --checkpoint-every 0
grep -q "'proj.raw' holds 153600 bytes, expected 76800 .* uint16" "$ERR" &&
  ok "the error names the uint16 size" || bad "uint16: $(cat "$ERR")"
step "a raw volume" "${IT[@]}" --iterations 1 --out v.raw --checkpoint-every 0 --quiet
cp v.raw vlong.raw && head -c 40 /dev/zero >> vlong.raw
for opt in --init --truth; do
  exits 3 "$opt raw 40 bytes too long" "${IT[@]}" --iterations 1 $opt vlong.raw --out x.raw \
    --checkpoint-every 0
  grep -q -- "$opt: 'vlong.raw' holds 55336 bytes, expected 55296" "$ERR" &&
    ok "$opt: the error names the file and both sizes" || bad "$opt long raw: $(cat "$ERR")"
done
[ ! -e x.raw ] && ok "no output from the refused raw files" || bad "x.raw written"

# uint16 projections stored as value x 900 (phantom --uint16-scale 900) read back with
# --input-scale 900, the scale stated in the summary; they came out 900 x too large.
step "uint16 projections x 900" phantom --geometry g.json --out q.raw --dtype uint16 \
  --uint16-scale 900 --device cpu --quiet
step "iterate float32" "${IT[@]}" --algorithm cgls --iterations 2 --out f32.raw --checkpoint-every 0
step "iterate uint16 --input-scale 900" iterate --geometry g.json --projections q.raw --raw-dtype uint16 \
  --input-scale 900 --device cpu --algorithm cgls --iterations 2 --out u16.raw --checkpoint-every 0
grep -q "(input scale 900)" "$OUT" && ok "the summary states the input scale" ||
  bad "no input scale in: $(cat "$OUT")"
close_raw f32.raw u16.raw 0.01 &&
  ok "uint16 / 900 reconstructs as the float32 data" || bad "uint16 --input-scale 900 differs"

# Parallel beam: the sinograms of `demo --parallel`.
step "demo --parallel" demo --parallel --size 32 --views 40 --slices 3 --out-dir pd --device cpu --quiet
P=$(awk 'BEGIN { printf "%.17g", 256 / 32 }')
step "iterate --sinograms" iterate --sinograms pd/sinograms.tif --pixel-size "$P" --algorithm cgls \
  --iterations 3 --out ps.nrrd --device cpu
[ "$(grep -c '^iteration ' "$OUT")" -eq 3 ] && ok "parallel: 3 iterations" || bad "parallel iterations"

# Radians given as degrees: warned as in fbp (the one library check), --angle-units says which.
step "iterate --angle-range 3.14159" iterate --sinograms pd/sinograms.tif --pixel-size "$P" \
  --angle-range 3.14159 --algorithm cgls --iterations 1 --out pr.raw --device cpu --checkpoint-every 0
grep -q "warning: the 40 angles (--angle-range 3.14159) span only 3.063 degrees: they look like radians" "$ERR" &&
  ok "iterate: radians warned" || bad "iterate radians: $(cat "$ERR")"
step "iterate --angle-units rad" iterate --sinograms pd/sinograms.tif --pixel-size "$P" \
  --angle-range 3.14159265358979 --angle-units rad --algorithm cgls --iterations 1 --out pr2.raw \
  --device cpu --checkpoint-every 0
grep -q "radians" "$ERR" && bad "iterate --angle-units rad warned" || ok "iterate --angle-units rad: no warning"
exits 2 "--angle-units with cone beam" "${IT[@]}" --angle-units rad --out x.raw

# An axis or a slice grid that no ray meets: an error naming the cause, not
# a blank volume with exit 0 (cgls stopped at once as "converged"), and
# nothing left behind (the iterations' table neither).
for alg in sirt cgls; do
  exits 3 "$alg: --axis 1e9, no ray crosses the volume" iterate --sinograms pd/sinograms.tif \
    --algorithm $alg --axis 1e9 --iterations 2 --out pn.raw --device cpu
  grep -q "no ray of the projections crosses the volume" "$ERR" && grep -q -- "--axis 1e+09 lies outside" "$ERR" &&
    ok "$alg: the message says no ray crosses the volume, the warning names --axis" || bad "$alg: --axis 1e9 message"
  [ -z "$(ls pn.raw* 2>/dev/null)" ] && ok "$alg: nothing left behind" || bad "$alg: left $(ls pn.raw*)"
done
exits 3 "--voxel 1e20" iterate --sinograms pd/sinograms.tif --algorithm cgls --voxel 1e20 \
  --iterations 2 --out pn.raw --device cpu
grep -q "expected a voxel of 1e-6 .. 1e6 bins" "$ERR" && ok "the message names the voxel's bounds" ||
  bad "--voxel 1e20 message"

# Usage errors.
exits 2 "no geometry nor sinograms" iterate --out x.raw
exits 2 "cgls with --nonneg" "${IT[@]}" --algorithm cgls --nonneg --out x.raw
exits 2 "--subsets without os-sart" "${IT[@]}" --subsets 4 --out x.raw
exits 2 "--tv-weight without fista-tv" "${IT[@]}" --tv-weight 0.1 --out x.raw
exits 2 "--tv-iterations with pdhg-tv" "${IT[@]}" --algorithm pdhg-tv --tv-weight 0.1 --tv-iterations 5 --out x.raw
exits 2 "unknown algorithm" "${IT[@]}" --algorithm art --out x.raw
exits 2 "--relaxation 2" "${IT[@]}" --relaxation 2 --out x.raw
exits 2 "--angles with cone beam" "${IT[@]}" --angle-range 90 --out x.raw
exits 2 "--i0 without pwls" "${IT[@]}" --i0 100 --out x.raw
exits 2 "pwls: --beta without --penalty" "${IT[@]}" --algorithm pwls --beta 5 --out x.raw
exits 2 "pwls: --penalty without --beta" "${IT[@]}" --algorithm pwls --penalty quadratic --out x.raw
exits 2 "pwls: huber without --huber-delta" "${IT[@]}" --algorithm pwls --penalty huber --beta 1 --out x.raw
exits 2 "pwls: --huber-delta with quadratic" "${IT[@]}" --algorithm pwls --penalty quadratic --beta 1 \
  --huber-delta 0.1 --out x.raw
exits 2 "pwls: --weights and --i0" "${IT[@]}" --algorithm pwls --weights proj.nrrd --i0 100 --out x.raw
exits 2 "pwls with --nonneg" "${IT[@]}" --algorithm pwls --nonneg --out x.raw
# Options that would do nothing with the others given: refused, naming them.
# has TEXT DESC: the last error names TEXT.
has() { grep -q -- "$1" "$ERR" && ok "$2" || bad "$2: no '$1' in the message"; }
exits 2 "--axis with cone beam" "${IT[@]}" --axis 5 --out x.raw
has "describe parallel beam" "--axis: the message says it is parallel beam"
exits 2 "--size with cone beam" "${IT[@]}" --size 64 --out x.raw
has "describe parallel beam" "--size: the message says it is parallel beam"
exits 2 "--tv-iterations without --tv-weight" "${IT[@]}" --algorithm fista-tv --tv-iterations 5 --out x.raw
has "only with --tv-weight" "--tv-iterations: the message names --tv-weight"
exits 2 "--keep-checkpoint with --checkpoint-every 0" "${IT[@]}" --keep-checkpoint --checkpoint-every 0 --out x.raw
has "keep-checkpoint: --checkpoint-every 0 writes no checkpoint" "--keep-checkpoint: the message names both"
exits 2 "--checkpoint with --checkpoint-every 0" "${IT[@]}" --checkpoint c.ck --checkpoint-every 0 --out x.raw
has "checkpoint: --checkpoint-every 0 writes no checkpoint" "--checkpoint: the message names both"
[ ! -e x.raw ] && ok "no output from the refused runs" || bad "x.raw written"
exits 3 "projections of another geometry" iterate --geometry g.json --projections pd/sinograms.tif \
  --out x.raw --device cpu
grep -q "expected 24 of 40 x 40" "$ERR" && ok "the error names the expected size" || bad "size error text"

# PWLS's weight file: the projections' shape and formats. The raw counts of the phantom's
# projections (1000 exp(-b)) as weights give the run with --i0 1000 to float rounding; a file of
# another size, a missing one, and weights that are negative or NaN are refused naming --weights.
python3 - <<'PY'
import math, struct
def read(p):
    d = open(p, 'rb').read()
    h, b = d.split(b'\n\n', 1)
    return h + b'\n\n', list(struct.unpack('<%df' % (len(b) // 4), b))
h, b = read('proj.nrrd')
def write(p, v, hdr=h):
    open(p, 'wb').write(hdr + struct.pack('<%df' % len(v), *v))
c = [1000 * math.exp(-x) for x in b]
write('w_counts.nrrd', c)
write('w_neg.nrrd', [-1.0] + c[1:])
write('w_nan.nrrd', c[:7] + [float('nan')] + c[8:])
write('w_small.nrrd', c[:40 * 40 * 23], h.replace(b'sizes: 40 40 24', b'sizes: 40 40 23'))
PY
step "pwls --weights" "${IT[@]}" --algorithm pwls --weights w_counts.nrrd --iterations 3 \
  --out pw_w.nrrd --checkpoint-every 0
step "pwls --i0" "${IT[@]}" --algorithm pwls --i0 1000 --iterations 3 --out pw_i.nrrd \
  --checkpoint-every 0
python3 -c "
import struct
a = open('pw_w.nrrd', 'rb').read().split(b'\n\n', 1)[1]; b = open('pw_i.nrrd', 'rb').read().split(b'\n\n', 1)[1]
x = struct.unpack('<%df' % (len(a) // 4), a); y = struct.unpack('<%df' % (len(b) // 4), b)
d = sum((p - q) ** 2 for p, q in zip(x, y)) ** 0.5; n = sum(q * q for q in y) ** 0.5
raise SystemExit(0 if d <= 1e-4 * n else 1)" && ok "--weights of the counts = --i0 (to 1e-4)" ||
  bad "--weights of the counts differs from --i0"
for w in neg:negative nan:NaN; do
  exits 3 "pwls --weights w_${w%:*}.nrrd" "${IT[@]}" --algorithm pwls --weights "w_${w%:*}.nrrd" \
    --out x.raw --checkpoint-every 0
  has "--weights.*${w#*:}" "w_${w%:*}: the message names --weights and says ${w#*:}"
done
exits 3 "pwls --weights of another size" "${IT[@]}" --algorithm pwls --weights w_small.nrrd --out x.raw
has "(--weights) holds 23 images" "the size error names --weights"
exits 1 "pwls --weights missing" "${IT[@]}" --algorithm pwls --weights nothere.nrrd --out x.raw
has "nothere.nrrd" "the missing file is named"

# An HDF5 dataset as --out with the default checkpoint: the checkpoint is a file beside
# file.h5, one per dataset (OUT.checkpoint was "r.h5:/a.checkpoint", refused as the output's
# own file); two datasets of one file, each run complete, no checkpoint left.
if "$CTR" info | grep -Eq '^ +hdf5 +yes'; then
  for d in /recon/a /recon/b; do
    step "iterate --out r.h5:$d (default checkpoint)" "${IT[@]}" --algorithm sirt --iterations 2 \
      --out "r.h5:$d"
  done
  [ ! -e r.h5.recon.a.checkpoint ] && [ ! -e r.h5.recon.b.checkpoint ] &&
    ok "no checkpoint left beside r.h5" || bad "checkpoint left: $(ls r.h5.* 2>/dev/null)"
  step "read back r.h5:/recon/a" iterate --geometry g.json --projections proj.nrrd --device cpu \
    --algorithm sirt --iterations 1 --init 'r.h5:/recon/a' --out rb.nrrd --checkpoint-every 0
fi
finish
