#!/usr/bin/env bash
# zarr-python reads ctrecon's OME-Zarr outputs (tests/zarr_read.py): fdk
# (float32 with a pyramid, uint16) and fbp outputs compared voxel for voxel
# with their raw outputs, the pyramid's levels with their 2x2x2 means, the
# OME-NGFF metadata; sharded outputs (--zarr-shard: shards past the volume's
# edge, shards of one chunk, uint16, fbp) the same way; tensorstore reads
# level 0 too where it is importable. Exits 77 (skipped) when python3 cannot import zarr
# (pip install zarr).
# Usage: bash zarr_python.sh path/to/ctrecon
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=${CTRECON_PYTHON:-python3}
if ! "$PY" -c 'import zarr, numpy' 2>/dev/null; then
  echo "SKIPPED: $PY cannot import zarr (pip install zarr)"
  exit 77
fi
. "$HERE/lib_cli.sh" "$@"
echo "# zarr-python $("$PY" -c 'import zarr; print(zarr.__version__)')"

step "geometry" geometry --out g.json --nu 96 --nv 80 --du 2 --dv 2 --views 48 --volume 70 \
  --voxel 1.5 --quiet
step "phantom" phantom --geometry g.json --out p.raw --device cpu --quiet
FDK=(fdk --geometry g.json --projections p.raw --device cpu --quiet)
for o in v.zarr v.raw; do step "fdk --out $o" "${FDK[@]}" --out $o; done
for o in u.zarr u.raw; do step "fdk --out $o (uint16)" "${FDK[@]}" --out $o --out-dtype uint16; done
# 70^3 in chunks of 64: shards of 2 chunks a side reach past the volume
step "fdk --out s.zarr --zarr-shard 2" "${FDK[@]}" --out s.zarr --zarr-shard 2
step "fdk --out su.zarr --zarr-shard 1 (uint16)" "${FDK[@]}" --out su.zarr --zarr-shard 1 \
  --out-dtype uint16
if grep -q '"sharding_indexed"' s.zarr/0/zarr.json && grep -q '"sharding_indexed"' su.zarr/1/zarr.json \
  && ! grep -q sharding v.zarr/0/zarr.json; then
  ok "--zarr-shard writes sharding_indexed arrays (and none without it at this size)"
else
  bad "--zarr-shard: the arrays' codecs"
fi
step "parallel demo" demo --parallel --size 24 --views 30 --slices 3 --out-dir pd --device cpu \
  --quiet
for o in b.zarr b.raw; do
  step "fbp --out $o" fbp --sinograms pd/sinograms.tif --pixel-size 2 --device cpu --quiet --out $o
done
step "fbp --out bs.zarr --zarr-shard 3" fbp --sinograms pd/sinograms.tif --pixel-size 2 \
  --device cpu --quiet --out bs.zarr --zarr-shard 3
if "$PY" "$HERE/zarr_read.py" v.zarr v.raw float32 u.zarr u.raw uint16 \
  b.zarr b.raw float32 s.zarr v.raw float32 su.zarr u.raw uint16 bs.zarr b.raw float32; then
  ok "zarr-python reads every output"
else
  bad "zarr-python"
fi
finish
