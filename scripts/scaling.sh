#!/usr/bin/env bash
# The multi-GPU scaling runs of issue 25 on the machine this runs on, every
# figure from this one machine (its single-GPU baseline included):
#   scripts/scaling.sh BUILD RESULTS_DIR [GPU_COUNTS]    (default "1 2 4", capped at the GPUs)
# In-core FDK 1024^3 from 1200 x 1024^2 between pinned arrays (bench_ooc
# memory): volume split, projection split and the planner's choice on each
# GPU count; parallel-beam FBP end to end, 2048 slices of 2048^2 from 2048
# uint16 projections (bench_fbp --e2e, pinned); each JSON holds the per-GPU
# busy times. SCALE_REPEATS (3) runs each, median reported. The out-of-core
# case runs from gpu-check.sh's ooc stage with OOC_GPUS.
set -uo pipefail
B=${1:?usage: scaling.sh BUILD RESULTS_DIR [GPU_COUNTS]}
OUT=${2:?}
COUNTS=${3:-1 2 4}
REPS=${SCALE_REPEATS:-3}
mkdir -p "$OUT"
have=$(nvidia-smi -L 2>/dev/null | wc -l)
for g in $COUNTS; do
  [ "$g" -gt "$have" ] && { echo "skip $g GPUs (this machine has $have)"; continue; }
  splits="auto volume projections"
  [ "$g" = 1 ] && splits=auto
  for s in $splits; do
    "$B/bench/bench_ooc" memory --n 1024 --views 1200 --det 1024 --repeats "$REPS" --gpus "$g" \
      --split "$s" --json "$OUT/fdk_${g}gpu_$s.json" 2>&1 | grep -E "^memory" 
  done
  "$B/bench/bench_fbp" --e2e --n 2048 --angles 2048 --slices 2048 --memory pinned \
    --repeats "$REPS" --gpus "$g" --json "$OUT/fbp_${g}gpu.json" 2>&1 | grep -E "end to end|GPU"
done
python3 - "$OUT" <<'PY'
import glob, json, sys
out = sys.argv[1]
rows = []
for f in sorted(glob.glob(out + "/*gpu*.json")):
    j = json.load(open(f))
    for c in j.get("cases", []):
        rows.append({"file": f.split("/")[-1], **{k: v for k, v in c.items() if k != "runs"}})
json.dump({"gpu": json.load(open(sorted(glob.glob(out + "/*gpu*.json"))[0])).get("gpu", "?"),
           "command": "scripts/scaling.sh", "cases": rows}, open(out + "/scaling.json", "w"), indent=1)
for r in rows:
    print(r["file"], r.get("seconds"), r.get("split", ""), r.get("workers", r.get("gpus", "")))
PY
