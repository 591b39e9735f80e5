#!/usr/bin/env bash
# OME-Zarr outputs (docs/file-formats.md, "OME-Zarr"): `--out volume.zarr` of
# fdk, fbp and iterate writes a directory with the group's and each pyramid
# level's zarr.json and zstd chunks, the same voxels as a raw output (read
# back through ctrecon: projections written as .zarr reconstruct to the same
# bits as from .raw); an existing output is refused without --force and
# replaced with it; --resume with nothing to resume is refused naming the
# journal; nothing temporary is left. zarr-python's reading of it: tests/zarr_python.sh.
# Usage: bash cli_zarr.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"

step "geometry" geometry --out g.json --nu 96 --nv 80 --du 2 --dv 2 --views 48 --volume 72 \
  --voxel 1.5 --quiet
step "phantom --out p.raw" phantom --geometry g.json --out p.raw --device cpu --quiet
step "phantom --out p.zarr" phantom --geometry g.json --out p.zarr --device cpu --quiet
FDK=(fdk --geometry g.json --device cpu --quiet)
step "fdk --out v.zarr" "${FDK[@]}" --projections p.raw --out v.zarr
step "fdk --out v.raw" "${FDK[@]}" --projections p.raw --out v.raw
for f in v.zarr/zarr.json v.zarr/0/zarr.json v.zarr/0/c/1/1/1 v.zarr/1/zarr.json v.zarr/1/c/0/0/0; do
  [ -s "$f" ] || bad "v.zarr: $f missing"
done
[ ! -e v.zarr/2 ] && ok "v.zarr: two levels (72 and 36 voxels a side), chunk keys c/Z/Y/X" ||
  bad "v.zarr: a third level"
grep -q '"version":[[:space:]]*"0.5"' v.zarr/zarr.json && grep -q '"millimeter"' v.zarr/zarr.json &&
  grep -q '"scale":[[:space:]]*\[1.5, 1.5, 1.5\]' v.zarr/zarr.json &&
  grep -q '"scale":[[:space:]]*\[3, 3, 3\]' v.zarr/zarr.json &&
  ok "the OME-NGFF 0.5 multiscales: millimetres, the voxel size and the level's" ||
  bad "the group's metadata: $(cat v.zarr/zarr.json)"
grep -q '"name":[[:space:]]*"zstd"' v.zarr/0/zarr.json && ok "zstd chunks" || bad "no zstd codec"

# ctrecon reads it: projections in OME-Zarr give the bits of the raw ones
step "fdk --projections p.zarr" "${FDK[@]}" --projections p.zarr --out vz.raw
same v.raw vz.raw "projections read from OME-Zarr reconstruct to the same bits"

# no clobber; --force replaces; --resume refused naming the format
cp v.zarr/0/c/0/0/0 before
exits 2 "fdk into an existing v.zarr" "${FDK[@]}" --projections p.raw --out v.zarr
grep -qF "'v.zarr'" "$ERR" && grep -qF -- "--force" "$ERR" && cmp -s before v.zarr/0/c/0/0/0 &&
  ok "refused naming 'v.zarr' and --force, the output kept" || bad "refusal: $(cat "$ERR")"
step "fdk --force into v.zarr (uint16)" "${FDK[@]}" --projections p.raw --out v.zarr --force \
  --out-dtype uint16
grep -q '"data_type":[[:space:]]*"uint16"' v.zarr/0/zarr.json && [ ! -e v.zarr/0/c/0/0/0.kept ] &&
  ok "--force replaced the output" || bad "--force did not replace v.zarr"
# resumable (the interruption: cli_stream.sh): --resume without a partial
# output is refused naming its journal
exits 1 "fdk --resume into w.zarr" "${FDK[@]}" --projections p.raw --out w.zarr --resume
grep -qF "w.zarr.partial.journal" "$ERR" && [ ! -e w.zarr ] && [ ! -e w.zarr.partial ] &&
  ok "--resume with nothing to resume refused naming the journal, nothing written" ||
  bad "--resume: $(cat "$ERR")"

# the plan counts the writer's rows of chunks: a host budget too small for
# them is refused naming --host-budget and the writer's bytes, nothing written
exits 1 "fdk --host-budget 1M into s.zarr" "${FDK[@]}" --projections p.raw --out s.zarr --host-budget 1M
grep -qF -- "--host-budget" "$ERR" && grep -qF "OME-Zarr writer's own buffers" "$ERR" && [ ! -e s.zarr ] &&
  ok "fdk: a budget below the rows of chunks refused naming --host-budget and the writer" ||
  bad "fdk --host-budget 1M: $(cat "$ERR")"

# fbp and iterate
step "parallel demo" demo --parallel --size 24 --views 30 --slices 3 --out-dir pd --device cpu \
  --quiet
step "fbp --out b.zarr" fbp --sinograms pd/sinograms.tif --pixel-size 2 --device cpu --quiet \
  --out b.zarr
[ -s b.zarr/0/zarr.json ] && ok "fbp wrote b.zarr" || bad "fbp: no b.zarr"
exits 1 "fbp --host-budget 16K into s.zarr" fbp --sinograms pd/sinograms.tif --pixel-size 2 \
  --device cpu --quiet --out s.zarr --host-budget 16K
grep -qF -- "--host-budget" "$ERR" && grep -qF "OME-Zarr writer's own buffers" "$ERR" && [ ! -e s.zarr ] &&
  ok "fbp: a budget below the rows of chunks refused naming --host-budget and the writer" ||
  bad "fbp --host-budget 16K: $(cat "$ERR")"
step "iterate --out i.zarr" iterate --geometry g.json --projections p.zarr --device cpu \
  --algorithm sirt --iterations 2 --out i.zarr --quiet
[ -s i.zarr/0/zarr.json ] && ok "iterate wrote i.zarr" || bad "iterate: no i.zarr"
# iterate: the plan fits 5 MiB (4.7 MiB), saving a 1 MiB volume with the
# writer's row of 64 slices and two threads' chunk scratch does not: refused
# before the iterations, naming --host-budget
step "geometry g2" geometry --out g2.json --nu 16 --nv 16 --du 8 --dv 8 --views 4 --volume 64 \
  --voxel 2 --quiet
step "phantom p2" phantom --geometry g2.json --out p2.raw --device cpu --quiet
export OMP_NUM_THREADS=2
exits 1 "iterate --host-budget 5M into s.zarr" iterate --geometry g2.json --projections p2.raw \
  --device cpu --algorithm sirt --iterations 1 --out s.zarr --quiet --host-budget 5M
unset OMP_NUM_THREADS
grep -qF -- "--host-budget" "$ERR" && grep -qF "OME-Zarr writer's own buffers" "$ERR" && [ ! -e s.zarr ] &&
  ok "iterate: saving beyond --host-budget refused up front, naming it and the writer" ||
  bad "iterate --host-budget 5M: $(cat "$ERR")"
clean "OME-Zarr outputs"
finish
