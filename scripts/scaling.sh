#!/usr/bin/env bash
# The multi-GPU scaling runs of issues 20 and 25 on the machine this runs on,
# every figure from this one machine (its single-GPU baseline included):
#   scripts/scaling.sh BUILD RESULTS_DIR [GPU_COUNTS]    (default "1 2 4", capped at the GPUs)
# SCALE_PARTS picks the parts, in this order (default all):
#   workers  FDK 1024^3 in memory on GPU 0 with one worker, then two workers
#            sharing it (the scheduler's overhead, issue 20);
#   incore   FDK 1024^3 from 1200 x 1024^2 between pinned arrays (bench_ooc
#            memory): the planner's choice, volume split and projection split
#            on each GPU count;
#   fbp      parallel-beam FBP end to end, 2048 slices of 2048^2 from 2048
#            uint16 projections (bench_fbp --e2e, pinned);
#   ooc      FDK 2048^3 from 1200 x 2048^2 file to file through the streamed
#            pipeline on each GPU count, each run right after the disk's floor
#            for it (the input read while an output-sized file is written,
#            both at once: bench_ooc floor); rounds of "floor + run" over the
#            GPU counts while time is left, SCALE_OOC_ROUNDS at most (3).
#            OOC_DIR (/tmp/ctr_ooc) needs ~55 GB free; deleted at the end.
# Each JSON holds the per-GPU busy times (upload, filter, backprojection,
# reduction, download; read and write for the pipeline: Okitsu et al. 2010,
# Fig. 4). SCALE_REPEATS (3) runs each in-memory case, median reported.
# SCALE_DEADLINE (epoch seconds, optional): a step that would not finish by
# then is skipped and said (the device tool's 10-minute calls).
set -uo pipefail
B=${1:?usage: scaling.sh BUILD RESULTS_DIR [GPU_COUNTS]}
OUT=${2:?}
COUNTS=${3:-1 2 4}
REPS=${SCALE_REPEATS:-3}
PARTS=${SCALE_PARTS:-workers incore fbp ooc}
DEADLINE=${SCALE_DEADLINE:-0}
mkdir -p "$OUT"
# The carried libraries gpu-check.sh exposed (its LD_LIBRARY_PATH ends with it),
# and a benchmark that cannot start stops the run with the loader's message
# instead of printing nothing through the greps below.
[ -d /tmp/ctr_runlibs ] && export LD_LIBRARY_PATH=/tmp/ctr_runlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for b in bench_ooc bench_fbp; do
  "$B/bench/$b" --help > /dev/null 2> "$OUT/start_$b.txt" ||
    { grep -q -i "error while loading\|not found" "$OUT/start_$b.txt" &&
      { echo "scaling.sh: $B/bench/$b cannot start:"; cat "$OUT/start_$b.txt"; exit 1; }; }
  rm -f "$OUT/start_$b.txt"
done
have=$(nvidia-smi -L 2>/dev/null | wc -l)
part() { [[ " $PARTS " == *" $1 "* ]]; }
# fits SECONDS WHAT: 0 when WHAT can still finish before the deadline
fits() {
  [ "$DEADLINE" = 0 ] && return 0
  local left=$(( DEADLINE - $(date +%s) ))
  [ "$left" -ge "$1" ] && return 0
  echo "skipped (${left} s left, ~$1 s needed): $2" | tee -a "$OUT/skipped.txt"
  return 1
}
counts=""
for g in $COUNTS; do
  if [ "$g" -gt "$have" ]; then echo "skip $g GPUs (this machine has $have)"; else counts="$counts $g"; fi
done

if part workers; then
  for w in 1 2; do
    fits 25 "workers $w" || continue
    "$B/bench/bench_ooc" memory --n 1024 --views 1200 --det 1024 --repeats "$REPS" --gpus 1 \
      --workers "$w" --json "$OUT/fdk_gpu0_${w}workers.json" 2>&1 | grep -E "^memory"
  done
fi

if part incore; then
  for g in $counts; do
    splits="auto volume projections"
    [ "$g" = 1 ] && splits=auto
    for s in $splits; do
      fits 25 "in-core FDK $g GPUs $s" || continue
      "$B/bench/bench_ooc" memory --n 1024 --views 1200 --det 1024 --repeats "$REPS" --gpus "$g" \
        --split "$s" --json "$OUT/fdk_${g}gpu_$s.json" 2>&1 | grep -E "^memory"
    done
  done
fi

if part fbp; then
  for g in $counts; do
    fits 60 "FBP $g GPUs" || continue
    "$B/bench/bench_fbp" --e2e --n 2048 --angles 2048 --slices 2048 --memory pinned \
      --repeats "$REPS" --gpus "$g" --json "$OUT/fbp_${g}gpu.json" 2>&1 | grep -E "end to end|GPU"
  done
fi

if part ooc; then
  D=${OOC_DIR:-/tmp/ctr_ooc}
  ON=${OOC_N:-2048}
  rm -rf "$D" && mkdir -p "$D"
  echo "ooc disk: $(df -h "$D" | tail -1)"
  if fits 90 "ooc: generating the input"; then
    "$B/bench/bench_ooc" gen --dir "$D" --n "$ON" --views "${OOC_VIEWS:-1200}" 2>&1 | tail -1
    for round in $(seq 1 "${SCALE_OOC_ROUNDS:-3}"); do
      for g in $counts; do
        fits "${OOC_STEP_SECONDS:-75}" "ooc round $round, $g GPUs" || continue
        o=$("$B/bench/bench_ooc" floor --in "$D/proj.raw" --out "$D/floor.bin" \
              --out-bytes $((ON * ON * ON * 4)) --name "floor_${g}gpu_r$round" \
              --json "$OUT/oocfloor_${g}gpu_r$round.json" 2>&1)
        rm -f "$D/floor.bin"
        fl=$(awk '$1 == "floor_seconds" { print $2 }' <<< "$o")
        "$B/bench/bench_ooc" run --dir "$D" --n "$ON" --views "${OOC_VIEWS:-1200}" --gpus "$g" \
          --name "ooc-$ON-${g}gpu" --floor "${fl:-0}" --json "$OUT/ooc_${g}gpu_r$round.json" 2>&1 |
          grep -E "wall|busy" | sed "s/^/ooc $g GPU(s) r$round: /"
        rm -f "$D/vol.nrrd"
      done
    done
  fi
  rm -rf "$D"
fi

python3 - "$OUT" <<'PY'
import glob, json, statistics, sys
out = sys.argv[1]
rows, gpu = [], "?"
for f in sorted(glob.glob(out + "/*.json")):
    if f.endswith("/scaling.json"):
        continue
    j = json.load(open(f))
    gpu = j.get("gpu", gpu)
    for c in j.get("cases", []):
        rows.append({"file": f.split("/")[-1], **{k: v for k, v in c.items() if k != "runs"},
                     **({"runs": c["runs"]} if "runs" in c else {})})
# out of core: per GPU count the median run and the median of its floors
ooc = {}
for r in rows:
    if r["file"].startswith("ooc_"):  # ooc_<G>gpu_r<round>.json
        ooc.setdefault(int(r["file"][4:].split("gpu")[0]), []).append(r)
summary = {g: {"seconds_median": statistics.median(x["seconds"] for x in v),
               "floor_seconds_median": statistics.median(x["floor_seconds"] for x in v),
               "runs": len(v)} for g, v in ooc.items()}
for s in summary.values():
    s["ratio_to_floor"] = s["seconds_median"] / s["floor_seconds_median"] if s["floor_seconds_median"] else None
json.dump({"gpu": gpu, "command": "scripts/scaling.sh", "ooc_by_gpus": summary, "cases": rows},
          open(out + "/scaling.json", "w"), indent=1)
for r in rows:
    print(r["file"], r.get("seconds"), r.get("split", ""), r.get("gpus", ""), r.get("worker_count", ""))
for g, s in sorted(summary.items()):
    print("ooc", g, "GPU(s):", s)
PY
