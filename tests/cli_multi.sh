#!/usr/bin/env bash
# Several workers from the command line (docs/multi-gpu.md), on the CPU:
# `fdk --workers N --split volume` gives the one-worker bytes, file to file and
# out of core; `--split projections` runs and --timings shows each worker;
# --gpus and --split refuse what they cannot mean. The GPU side of the same
# options runs in test_gpu_multi and scripts/gpu-check.sh.
# Usage: bash cli_multi.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"
fails() { # fails CODE PATTERN DESC ARGS...: exits CODE with PATTERN on stderr
  local code=$1 pat=$2 desc=$3; shift 3
  run "$@"
  if [ "$rc" -eq "$code" ] && grep -q -e "$pat" "$ERR"; then ok "$desc"; else bad "$desc: exit $rc"; fi
}

step "geometry" geometry --out g.json --nu 48 --nv 40 --du 9 --dv 12 --views 40 --volume 32 \
  --voxel 8 --quiet
step "phantom" phantom --geometry g.json --out p.raw --device cpu --quiet
FDK=(fdk --geometry g.json --projections p.raw --device cpu --quiet)
step "one worker" "${FDK[@]}" --out one.raw --max-slab-slices 6
step "volume split on 3 workers" "${FDK[@]}" --out three.raw --max-slab-slices 6 --workers 3 \
  --split volume
same three.raw one.raw "volume split on 3 workers equals one worker, byte for byte"
step "volume split, scratch store" "${FDK[@]}" --out scratch.raw --max-slab-slices 6 \
  --workers 2 --split volume --store scratch
same scratch.raw one.raw "volume split through the scratch file equals one worker"
run "${FDK[@]}" --out proj.raw --workers 2 --split projections --timings
if [ "$rc" -eq 0 ] && grep -q "per worker" "$ERR" && grep -q "projections split" "$ERR"; then
  ok "projection split on 2 workers, --timings per worker"
else
  bad "projection split on 2 workers, --timings per worker: exit $rc"
fi
[ "$(wc -c <proj.raw)" -eq $((32 * 32 * 32 * 4)) ] && ok "projection split output size" ||
  bad "projection split output size"

fails 2 "expected auto, volume or projections" "--split refuses an unknown scheme" \
  "${FDK[@]}" --out x.raw --split halves
fails 2 "listed twice" "--gpus refuses a repeated GPU" "${FDK[@]}" --out x.raw --gpus 0,0
fails 2 "expected GPU numbers" "--gpus refuses a non-number" "${FDK[@]}" --out x.raw --gpus one
fails 2 "with --device cpu" "--gpus with --device cpu is a usage error" \
  fdk --geometry g.json --projections p.raw --out x.raw --device cpu --gpus 0
[ ! -e x.raw ] && ok "no output of the refused runs" || bad "x.raw written"
finish
