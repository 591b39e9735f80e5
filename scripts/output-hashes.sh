#!/usr/bin/env bash
# Runs a fixed set of CPU reconstructions with a ctrecon binary and prints the
# SHA-256 of every output: two trees give the same list exactly when their CPU
# outputs are bit-identical (used to check refactorings, e.g. the redesign).
#   scripts/output-hashes.sh path/to/ctrecon WORKDIR > hashes.txt
set -euo pipefail
bin=$(realpath "$1")
mkdir -p "$2"
cd "$2"
rm -rf ./*
export OMP_NUM_THREADS=2
q() { "$bin" "$@" > /dev/null 2>&1 || { echo "failed: ctrecon $*" >&2; exit 1; }; }
q geometry --out g.json --volume 48 --voxel 5 --views 60 --nu 64 --nv 56 --du 6 --dv 6
q phantom --geometry g.json --out proj.nrrd --truth truth.nrrd
q fdk --device cpu --geometry g.json --projections proj.nrrd --out vol.nrrd
q fdk --device cpu --geometry g.json --projections proj.nrrd --out vol-ooc.raw --subvolume-slices 7 --store scratch --views-per-batch 8
q fdk --device cpu --geometry g.json --projections proj.nrrd --out vol-u16.nrrd --out-dtype uint16 --out-scale 1000 --filter shepp-logan --cutoff 0.8 --slices 5:40
q geometry --out gs.json --volume 40 --voxel 5 --views 40 --nu 64 --nv 56 --du 6 --dv 6 --range 220
q phantom --geometry gs.json --out projs.nrrd
q fdk --device cpu --geometry gs.json --projections projs.nrrd --out vols.nrrd
q demo --parallel --device cpu --size 48 --views 40 --slices 6
q fbp --device cpu --projections demo-parallel-out/projections.tif --flat demo-parallel-out/flat.tif --dark demo-parallel-out/dark.tif --out rec.nrrd --axis 23.5
q fbp --device cpu --projections demo-parallel-out/projections.tif --flat demo-parallel-out/flat.tif --dark demo-parallel-out/dark.tif --out rec-n.nrrd --interp nearest --filter shepp-logan --rows 1:5 --batch 3 --axis 23.5
q pet simulate --device cpu --out data.json --events 2e5 --lattice 32x32x8 --views 8x1
q pet recon --device cpu --data data.json --out pet.nrrd --iterations 2
q iterate --device cpu --geometry g.json --projections proj.nrrd --out it-sirt.nrrd --algorithm sirt --iterations 3
q iterate --device cpu --geometry g.json --projections proj.nrrd --out it-cgls.raw --algorithm cgls --iterations 3 --pair fast
q iterate --device cpu --sinograms demo-parallel-out/sinograms.tif --out it-par.nrrd --algorithm os-sart --iterations 2 --subsets 4 --axis 23.5
q rabbitct-make --out r.rct --views 24 --width 64 --height 48 --sizes 16
q rabbitct r.rct --size 16 --device cpu --json rabbit.json
for f in $(find . -type f \( -name '*.nrrd' -o -name '*.raw' -o -name '*.tif' -o -name '*.json' -o -name '*.rct' \) | sort); do
  case $f in ./rabbit.json) continue ;; esac # timings
  sha256sum "$f"
done
