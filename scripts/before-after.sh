#!/usr/bin/env bash
# The same GPU benchmarks of two builds in one session, alternated run by run
# so that drift of the machine hits both alike: a refactoring's "before and
# after" (issue 19 asks for FDK, FBP and PET within 3 %).
#
#   scripts/before-after.sh BASE_BUILD NEW_BUILD RESULTS_DIR [ROUNDS]
#
# Each round runs, for base then new: FDK 1024^3 from 1200 x 1024^2 between
# pinned arrays through ctr_fdk_stream_memory (bench_ooc memory, the path
# users run in both trees), parallel-beam FBP end to end (2048 slices of
# 2048^2 from 2048 uint16 projections, pinned memory: bench_fbp --e2e) and
# the PET benchmark (bench_pet: per-view projectors and one block-RAMLA
# iteration) and iterative CT (bench_iterative fp-A, iter-A: case A's matched
# and fast pairs, 4 SIRT and 4 CGLS iterations; BA_ITER_CASES overrides). RESULTS_DIR/before_after.json: every run and, per case, the
# median of the rounds for each build and their ratio.
set -uo pipefail
BASE=${1:?usage: before-after.sh BASE_BUILD NEW_BUILD RESULTS_DIR [ROUNDS]}
NEW=${2:?}
OUT=${3:?}
ROUNDS=${4:-3}
mkdir -p "$OUT/runs"
for r in $(seq 1 "$ROUNDS"); do
  for side in base new; do
    B=$BASE
    [ "$side" = new ] && B=$NEW
    "$B/bench/bench_ooc" memory --n 1024 --views 1200 --det 1024 --repeats 1 \
      --json "$OUT/runs/fdk_${side}_$r.json" > "$OUT/runs/fdk_${side}_$r.log" 2>&1
    echo "round $r $side fdk rc=$?"
    mem=()
    "$B/bench/bench_fbp" --help 2>&1 | grep -q -- "--memory" && mem=(--memory pinned --repeats 1)
    "$B/bench/bench_fbp" --e2e --n 2048 --angles 2048 --slices ${BA_FBP_SLICES:-2048} "${mem[@]}" \
      --json "$OUT/runs/fbp_${side}_$r.json" > "$OUT/runs/fbp_${side}_$r.log" 2>&1
    echo "round $r $side fbp rc=$?"
    "$B/bench/bench_pet" --repeats 3 --json "$OUT/runs/pet_${side}_$r.json" \
      > "$OUT/runs/pet_${side}_$r.log" 2>&1
    echo "round $r $side pet rc=$?"
    "$B/bench/bench_iterative" --cases "${BA_ITER_CASES:-fp-A,iter-A}" --pairs both --repeats 1 \
      --json "$OUT/runs/iter_${side}_$r.json" > "$OUT/runs/iter_${side}_$r.log" 2>&1
    echo "round $r $side iter rc=$?"
  done
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import glob, json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def cases(path):
    try:
        j = json.load(open(path))
    except Exception as e:
        return {}
    res = {}
    for c in j.get("cases", []):
        name = c.get("name")
        s = c.get("seconds", c.get("median_seconds"))
        if name is not None and isinstance(s, (int, float)):
            if name.endswith("-pinned"):  # the new bench_fbp names the memory kind
                name = name[: -len("-pinned")]
            res[name] = s
    return res
table, runs = {}, {}
for bench in ("fdk", "fbp", "pet", "iter"):
    for side in ("base", "new"):
        for r in range(1, rounds + 1):
            for name, s in cases(f"{out}/runs/{bench}_{side}_{r}.json").items():
                runs.setdefault(f"{bench}/{name}", {}).setdefault(side, []).append(s)
for key, v in sorted(runs.items()):
    if "base" in v and "new" in v:
        b, n = statistics.median(v["base"]), statistics.median(v["new"])
        table[key] = {"base_seconds": b, "new_seconds": n, "new_over_base": n / b if b else None,
                      "base_runs": v["base"], "new_runs": v["new"]}
        print(f"{key:50s} base {b:9.4f} s  new {n:9.4f} s  new/base {n / b if b else 0:6.3f}")
json.dump({"command": "scripts/before-after.sh", "rounds": rounds, "cases": table},
          open(f"{out}/before_after.json", "w"), indent=1)
PY
