#!/usr/bin/env bash
# The distributed FDK's benchmark (docs/distributed.md, "Measured"): bench_mpi
# as one process with CORES threads against R ranks of CORES / R threads each
# (bound to their cores), the same cores in all, on the CPU; and one process
# against 2 ranks sharing the GPU. Each case writes OUT/mpi_<name>.json (the
# median of REPEATS, every rank's bytes read against its ideal) and a line to
# OUT/mpi_summary.txt with the overhead against the one-process run.
#
#   scripts/bench-mpi.sh BUILD_DIR OUT_DIR [cpu|cuda|all]
#
# Environment: SIZE (512), VIEWS (512), DET (1024), REPEATS (3), CORES (nproc),
# RANKS (1 2 4 8: those that divide CORES run bound; more ranks than cores run
# oversubscribed with one thread each, and say so), DATA (/tmp/ctr_mpi: the
# projections, SIZE 512 needs 2 GiB there). PIN=LIST (taskset's cpu list, e.g.
# PIN=1): every process of every case runs on those cpus only (CORES = their
# count), ranks unbound within them - the same cores for all on a machine
# whose other cpus are busy.
set -uo pipefail
BUILD=${1:?usage: scripts/bench-mpi.sh BUILD_DIR OUT_DIR [cpu|cuda|all]}
OUT=${2:?usage: scripts/bench-mpi.sh BUILD_DIR OUT_DIR [cpu|cuda|all]}
WHAT=${3:-all}
SIZE=${SIZE:-512} VIEWS=${VIEWS:-512} DET=${DET:-1024} REPEATS=${REPEATS:-3}
CORES=${CORES:-$(nproc)} RANKS=${RANKS:-1 2 4 8} DATA=${DATA:-/tmp/ctr_mpi}
BENCH=$BUILD/bench/bench_mpi
PIN=${PIN:-}
TASKSET=()
if [ -n "$PIN" ]; then
  TASKSET=(taskset -c "$PIN")
  CORES=$(taskset -c "$PIN" nproc)
fi
MPIRUN=$(command -v mpirun || true)
mkdir -p "$OUT" "$DATA"
[ -x "$BENCH" ] || { echo "bench-mpi: $BENCH missing (build the bench_mpi target)"; exit 1; }
[ -n "$MPIRUN" ] || { echo "bench-mpi: no mpirun (scripts/install-deps.sh)"; exit 1; }
export OMPI_MCA_btl_vader_single_copy_mechanism=none
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
SUMMARY=$OUT/mpi_summary.txt
common=(--size "$SIZE" --views "$VIEWS" --det "$DET" --repeats "$REPEATS" --dir "$DATA")

# seconds (wall) and CPU seconds (all ranks) of a case's JSON
secs() { sed -n 's/.*"seconds": \([0-9.]*\).*/\1/p' "$1" | head -1; }
cpus() { sed -n 's/.*"cpu_seconds": \([0-9.]*\).*/\1/p' "$1" | head -1; }

# one DEVICE NAME THREADS: the one-process run
one() {
  "${TASKSET[@]}" "$BENCH" "${common[@]}" --device "$1" --threads "$3" --name "$2" \
    --json "$OUT/mpi_$2.json" | tee -a "$SUMMARY"
}
# ranks DEVICE NAME R THREADS BIND: R ranks of THREADS threads
ranks() {
  local bind=(--bind-to none)
  [ "$5" = bind ] && [ -z "$PIN" ] && bind=(--map-by "slot:PE=$4" --bind-to core)
  "$MPIRUN" --oversubscribe -np "$3" "${bind[@]}" "${TASKSET[@]}" "$BENCH" "${common[@]}" \
    --device "$1" --threads "$4" --name "$2" --json "$OUT/mpi_$2.json" | tee -a "$SUMMARY"
}
overhead() { # overhead BASE_JSON CASE_JSON LABEL: wall time and CPU time against the base
  local b c bc cc
  b=$(secs "$1") c=$(secs "$2") bc=$(cpus "$1") cc=$(cpus "$2")
  awk -v b="$b" -v c="$c" -v bc="$bc" -v cc="$cc" -v l="$3" 'BEGIN {
    printf "%s: %.3f s against %.3f s: %+.1f %% wall; CPU %.2f s against %.2f s: %+.1f %%\n",
           l, c, b, 100 * (c / b - 1), cc, bc, 100 * (cc / bc - 1) }' | tee -a "$SUMMARY"
}

echo "== bench-mpi $(date -u +%FT%TZ) on $(hostname): $CORES cores${PIN:+ (cpus $PIN)}, $SIZE^3 from $VIEWS x $DET^2, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$SUMMARY"
if [ "$WHAT" = cpu ] || [ "$WHAT" = all ]; then
  how=bound
  [ -n "$PIN" ] && how="on cpus $PIN"
  one cpu cpu-process "$CORES"
  for r in $RANKS; do
    if [ $((CORES % r)) -eq 0 ]; then
      ranks cpu "cpu-ranks$r" "$r" $((CORES / r)) bind
      overhead "$OUT/mpi_cpu-process.json" "$OUT/mpi_cpu-ranks$r.json" \
        "cpu: $r rank(s) x $((CORES / r)) thread(s), $how, vs 1 process x $CORES"
    else
      ranks cpu "cpu-ranks$r" "$r" 1 nobind
      overhead "$OUT/mpi_cpu-process.json" "$OUT/mpi_cpu-ranks$r.json" \
        "cpu: $r rank(s) x 1 thread on $CORES cores (oversubscribed), vs 1 process x $CORES"
    fi
  done
  one cpu cpu-process-again "$CORES" # drift of the machine over the runs
fi
if [ "$WHAT" = cuda ] || [ "$WHAT" = all ]; then
  one cuda gpu-process "$CORES"
  ranks cuda gpu-ranks2 2 $((CORES / 2 > 0 ? CORES / 2 : 1)) nobind
  overhead "$OUT/mpi_gpu-process.json" "$OUT/mpi_gpu-ranks2.json" "cuda: 2 ranks sharing the GPU vs 1 process"
fi
