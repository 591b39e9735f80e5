#!/usr/bin/env bash
# What a GPU machine runs (docs/design.md): configure for sm_90, build, ctest -L gpu,
# compute-sanitizer memcheck on every GPU test, the benchmarks with ASTRA side by
# side, logs and JSON into RESULTS_DIR.
#
#   scripts/gpu-check.sh RESULTS_DIR [STAGES]
#
# BUILD_TARGETS (optional): build only these targets.
# STAGES is a comma list of build,test,sanitize,floors,benchA,benchB,astra,rabbitct,rabbitsweep,hostxfer,ooc,fbp,pet,
# iterative,sync,mpi,python (default: all but sync, mpi and python). python: the Python
# package built there, its GPU tests (CuPy) and the binding's overhead (issue 22). ooc: the out-of-core benchmark on the local disk (OOC_DIR,
# default /tmp/ctr_ooc; needs ~55 GB free, deleted at the end). sync: the synchrotron
# pipeline file to file (issue 24) against the disk's concurrent read-and-write floor
# (SYNC_DIR, default /tmp/ctr_sync; SYNC_N 2048: needs ~50 GB free, deleted at the end;
# SYNC_CASES picks the cases by name).
# mpi: the distributed FDK (issue 21, scripts/bench-mpi.sh): 1, 2, 4, 8 ranks on the CPU
# against one process with the same cores, 1 process vs 2 ranks on the GPU, the bytes each
# rank read against the ideal (MPI_SIZE 512, MPI_DIR /tmp/ctr_mpi: 2 GiB; needs Open MPI).
# iterative: the iterative CT tests and memcheck (ITER_TESTS=0 skips them), its benchmark
# (issue 23; ITER_CASES picks the cases, default all but cgls-2048, "none" for none;
# ITER_ARGS: more bench_iterative options, e.g. "--pairs fast";
# ITER_2048=1 adds the 2048^3 CGLS, about 10 minutes and 120 GB of host memory, in its own
# JSON), and ASTRA's FP3D/SIRT3D/CGLS3D on case A's data when astra is among the stages
# (needs the fp-A case in the same call). benchA runs the full kernel sweep (SWEEP=0: not);
# FDK_HOST: bench_fdk_cuda --host settings for the pageable runs (e.g. auto,registered,driver);
# FDK_VARIANTS: its kernel variants (none: the end-to-end runs only). The machine may lack FFTW, cJSON,
# libtiff and libpng: a tree carrying unpacked Debian packages in .deps/ (made by
# scripts/carry-deps.sh with .whl/ and .carry/; see
# bench/NOTES.md) builds against those. ASTRA comes from wheels in .whl/. Open MPI and
# HDF5 (the mpi and sync stages) come from .carry/sys-debs.tar.xz (scripts/carry-sys.sh)
# when the image lacks them. On several GPUs the tests use all, the benchmarks GPU 0 (BENCH_GPUS).
set -uo pipefail
OUT=${1:?usage: scripts/gpu-check.sh RESULTS_DIR [STAGES]}
STAGES=${2:-build,test,sanitize,floors,benchA,benchB,astra,rabbitct,ooc,fbp,pet,iterative}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build-gpu}
mkdir -p "$OUT"
LOGS=$(mktemp -d /tmp/ctr_logs.XXXX)
has() { [[ ",$STAGES," == *",$1,"* ]]; }
# with_astra CMD...: runs CMD in a subshell that sees ASTRA (wheels from .whl/
# installed once under /tmp/site, its cuFFT 11 calls shimmed onto cuFFT 12)
# and not our carried libraries.
with_astra() {
  (
    unset LD_LIBRARY_PATH
    site=/tmp/site
    if [ ! -d $site/astra ]; then
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target $site "$ROOT"/.whl/*.whl || exit 1
      mkdir -p $site/nvidia/cufft/lib
      gcc -shared -fPIC -O2 -o $site/nvidia/cufft/lib/libcufft.so.11 \
        "$ROOT/bench/astra_shim/cufft11_shim.c" \
        -Wl,--version-script="$ROOT/bench/astra_shim/cufft11.map" -Wl,-soname,libcufft.so.11 -ldl || exit 1
    fi
    cufft=$(dirname "$(find / -name 'libcufft.so.12' -not -path '*/proc/*' 2>/dev/null | head -1)")
    export PYTHONPATH=$site LD_LIBRARY_PATH=$cufft
    "$@"
  )
}
say() { echo "== $*" | tee -a "$LOGS/summary.txt" "$OUT/progress.txt"; }  # progress.txt: what a run cut short still returns

# The device copy of the tree has no .git: pass CTR_GIT_REVISION in from the caller.
if [ -z "${CTR_GIT_REVISION:-}" ]; then
  CTR_GIT_REVISION=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
  git -C "$ROOT" diff --quiet HEAD 2>/dev/null || CTR_GIT_REVISION="$CTR_GIT_REVISION+dirty"
fi
export CTR_GIT_REVISION

# Carried libraries: build against .deps; at run time expose only the ones the
# machine lacks, so its own newer libraries are not shadowed.
CMAKE_EXTRA=()
RUNLIBS=/tmp/ctr_runlibs
if [ -d "$ROOT/.deps/usr" ]; then
  D=$ROOT/.deps
  rm -rf "$RUNLIBS" && mkdir -p "$RUNLIBS"
  for f in "$D"/usr/lib/x86_64-linux-gnu/*.so.* "$D"/lib/x86_64-linux-gnu/*.so.*; do
    [ -e "$f" ] || continue
    so=$(basename "$f" | sed -E 's/(\.so\.[0-9]+).*/\1/')
    ldconfig -p | grep -q " $so " || ln -sf "$f" "$RUNLIBS/$so"
  done
  LIBDIRS="$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu"
  CMAKE_EXTRA+=(-DCMAKE_PREFIX_PATH="$D/usr"
    -DCMAKE_C_FLAGS="-I$D/usr/include/x86_64-linux-gnu"
    -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$LIBDIRS"
    -DCMAKE_SHARED_LINKER_FLAGS="-Wl,-rpath-link,$LIBDIRS")
  export LD_LIBRARY_PATH=$RUNLIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  say "carried libraries exposed: $(ls "$RUNLIBS" | tr '\n' ' ')"
fi

# Open MPI and HDF5 where the image lacks them (.carry/sys-debs.tar.xz, made by
# scripts/carry-sys.sh): Debian 12's packages unpacked into / without replacing
# any file the image has; the build then finds them where Debian puts them.
if [ -f "$ROOT/.carry/sys-debs.tar.xz" ] && { ! command -v mpirun > /dev/null ||
     { [ ! -e /usr/include/hdf5/serial/hdf5.h ] && [ ! -e /usr/include/hdf5.h ]; }; }; then
  t=$(mktemp -d /tmp/ctr_sys.XXXX)
  tar -C "$t" -xJf "$ROOT/.carry/sys-debs.tar.xz"
  for d in lib bin sbin; do  # a merged /usr: /lib is a link to usr/lib
    if [ -L "/$d" ] && [ -d "$t/$d" ]; then cp -an "$t/$d/." "$t/usr/$d/"; rm -rf "${t:?}/$d"; fi
  done
  cp -an "$t/." / 2>> "$LOGS/carry-sys.log"
  ldconfig 2>> "$LOGS/carry-sys.log"
  rm -rf "$t"
  say "carried Open MPI and HDF5 unpacked into / (no file replaced): mpirun $(command -v mpirun || echo missing), $(mpirun --version 2>&1 | head -1), hdf5.h $(ls /usr/include/hdf5/serial/hdf5.h 2>/dev/null || echo missing)"
fi

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv \
  > "$LOGS/gpu.txt" 2>&1
say "GPU: $(tail -n +2 "$LOGS/gpu.txt")"

if has build; then
  say "build ($BUILD)"
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCTRECON_CUDA=on \
    -DCMAKE_CUDA_ARCHITECTURES=90 "${CMAKE_EXTRA[@]}" > "$LOGS/build.log" 2>&1 &&
    cmake --build "$BUILD" -j "$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS} >> "$LOGS/build.log" 2>&1
  rc=$?
  grep -E "registers|spill" "$LOGS/build.log" | sed 's/^ *//' > "$LOGS/kernel_resources.txt"
  say "build rc=$rc"
  [ $rc -eq 0 ] || { tail -30 "$LOGS/build.log"; tar -C "$LOGS" -czf "$OUT/logs.tgz" .; exit 1; }
fi

if has test; then
  say "ctest -L gpu, then the CPU suite"
  (cd "$BUILD" && ctest -L gpu --output-on-failure -V) > "$LOGS/ctest_gpu.log" 2>&1
  say "ctest gpu rc=$? : $(grep -E 'tests passed|tests failed' "$LOGS/ctest_gpu.log" | tail -1)"
  grep -E "relative RMS|RMSE|pair kernels|filter kind" "$LOGS/ctest_gpu.log" | tee -a "$LOGS/summary.txt" | head -60
  (cd "$BUILD" && ctest -L cpu -j 8 --output-on-failure) > "$LOGS/ctest_cpu.log" 2>&1
  say "ctest cpu rc=$? : $(grep -E 'tests passed|tests failed' "$LOGS/ctest_cpu.log" | tail -1)"
fi

if has sanitize; then
  # compute-sanitizer memcheck on every GPU test (all of `ctest -L gpu`),
  # through CTest's memory checker of type CudaSanitizer: each test runs as
  # ctest runs it (its arguments, environment, working directory and skip
  # code) under memcheck, and any memcheck error fails it (--error-exitcode).
  # CTR_TEST_QUICK=1 shortens the tests that have a quick mode (test_gpu_fdk).
  say "compute-sanitizer memcheck on every GPU test (ctest -T memcheck -L gpu)"
  sanitizer=$(command -v compute-sanitizer || echo compute-sanitizer)
  cmake -S "$ROOT" -B "$BUILD" -DMEMORYCHECK_TYPE=CudaSanitizer \
    -DMEMORYCHECK_COMMAND="$sanitizer" \
    -DMEMORYCHECK_COMMAND_OPTIONS="--tool memcheck --error-exitcode 9" \
    > "$LOGS/sanitizer_configure.log" 2>&1
  # (less the tests labelled api-errors: they provoke a CUDA API error on purpose)
  (cd "$BUILD" && CTR_TEST_QUICK=1 ctest -T memcheck -L gpu -LE api-errors --output-on-failure) \
    > "$LOGS/sanitizer.log" 2>&1
  say "memcheck rc=$? : $(grep -E 'tests passed|tests failed' "$LOGS/sanitizer.log" | tail -1)"
  grep -E "Memory checking results|Defects|ERROR SUMMARY|Failed|\*\*\*" "$LOGS/sanitizer.log" \
    | tee -a "$LOGS/summary.txt" | head -40
fi

# The benchmarks below are single-GPU figures: on a machine of several GPUs
# they see GPU 0 alone (BENCH_GPUS: another list; the tests above used every
# GPU; scripts/scaling.sh measures several).
if [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -gt 1 ]; then
  export CUDA_VISIBLE_DEVICES=${BENCH_GPUS:-0}
  say "benchmarks on GPU(s) $CUDA_VISIBLE_DEVICES of $(nvidia-smi -L | wc -l)"
fi

# Issue 26: every figure against a floor measured in the same run, every peer
# as its users run it, medians of 3 (bench/NOTES.md, "Method"). Three
# invocations, each within ~9 minutes of wall time on an H100 once built
# (estimates, broken down at each stage):
#   1. scripts/gpu-check.sh OUT floors,benchA,benchB,astra   ~5 min (SWEEP=0: ~4.5)
#   2. scripts/gpu-check.sh OUT floors,fbp,astra             ~7-9 min
#   3. scripts/gpu-check.sh OUT ooc                          ~8-9 min
# Each leaves at most 8 files in OUT (its JSON, progress.txt, summary.txt,
# logs.tgz; bundle_results packs the JSON into results.tgz beyond that).
if has floors; then
  # The host transfer floor (bench/bench_pcie.c): one cudaMemcpy each way,
  # pinned and pageable, 16 MiB (a slice) and 1 GiB; the staged host copy by
  # threads and slot size; registration; the host-transfer layer's paths;
  # median of 5 (~1.5 min; PCIE_STAGES picks stages, PCIE_THREADS threads).
  say "floors: host transfers"
  "$BUILD/bench/bench_pcie" --sizes 16M,1G --repeats 5 ${PCIE_STAGES:+--stages $PCIE_STAGES} \
    ${PCIE_THREADS:+--threads $PCIE_THREADS} --json "$OUT/pcie.json" > "$LOGS/pcie.log" 2>&1
  say "pcie rc=$?"
  tee -a "$LOGS/summary.txt" < "$LOGS/pcie.log"
fi

# benchA / benchB: kernels (A with the sweep unless SWEEP=0), then ours end to
# end from pinned and from pageable memory (set-up included, median of 3);
# with astra, ASTRA's FDK_CUDA three ways (algorithm.run alone, a user's end
# to end with data3d.create/get, and with data3d.link), median of 3.
# Estimate (H100): A ~1 min (+0.5 with the sweep), B ~3 min.
for c in A B; do
  has "bench$c" || continue
  sweep=""
  [ "$c" = A ] && [ "${SWEEP:-1}" = 1 ] && sweep="--sweep"
  dump=/tmp/ctr_dump_$c
  mkdir -p "$dump"
  say "bench case $c $sweep"
  "$BUILD/bench/bench_fdk_cuda" --case $c $sweep --repeats 3 --json "$OUT/bench_$c.json" \
    --dump "$dump" ${FDK_HOST:+--host $FDK_HOST} ${FDK_VARIANTS:+--variants $FDK_VARIANTS} \
    > "$LOGS/bench_$c.log" 2>&1
  say "bench $c rc=$?"
  grep -E "end to end" "$LOGS/bench_$c.log" | tee -a "$LOGS/summary.txt"
  sort -t' ' -k1,1 "$LOGS/bench_$c.log" | awk '$NF ~ /^[0-9.]+$/ && NF == 6' | sort -k6 -n -r | head -8 \
    | tee -a "$LOGS/summary.txt"
  if has astra; then
    say "ASTRA FDK_CUDA on case $c"
    with_astra python3 "$ROOT/bench/astra_compare.py" "$dump" $c "$OUT/astra_$c.json" --repeats 3 \
      --ours-json "$OUT/bench_$c.json" > "$LOGS/astra_$c.log" 2>&1
    say "astra $c rc=$?"
    grep -E '"(astra_run_seconds|astra_user_e2e_seconds|astra_user_e2e_variant|ours_seconds_[a-z]+_pageable|speedup_headline|relative_difference_[a-z]+)"' \
      "$LOGS/astra_$c.log" | tee -a "$LOGS/summary.txt"
  fi
  rm -rf "$dump"
done

if has ooc; then
  # Lu et al. 2016's large dataset (2048^3 from 1200 x 2048^2) through the streamed
  # pipeline, file to file, against the disk floor measured in the same
  # session right before each repeat (issue 26). The floor (bench_ooc floor):
  # the run's own input file read while a file of the output's size is
  # written, both at once, direct I/O, 1 GiB requests, the write ended by
  # fsync; floor = wall time until both finish. Its file is deleted before
  # the pipeline runs, and the pipeline's output after each run, so the disk
  # never holds more than the input and one output-sized file (f32: 20.1 +
  # 34.4 = 54.5 GB; u16: 10.1 + 17.2 GB) of its 64 GiB. Order:
  #   gen f32 input; sequential rates once (8 GiB each way, extra fields);
  #   OOC_REPEATS x [floor; f32 run; f32 run with an 8 GB GPU budget];
  #   delete input; gen u16; OOC_REPEATS x [floor; u16 run]; delete input;
  #   1024^3 in pinned memory (median of 3).
  # ooc.json is merged after each case (a run cut short keeps what it has):
  # per case the median run, the median of its floors, their ratio, and
  # every run and floor. Estimate (H100 host, disk ~1.6-1.8 GB/s): gen f32
  # ~1 min, f32 3 x (~30 + 31 + 35 s) ~5 min, u16 (gen + 3 x (~16 + 17 s))
  # ~2 min, memory ~0.5 min: ~8.5 min. OOC_CASES (default "f32 u16 memory")
  # splits it over two invocations if the disk is slower.
  D=${OOC_DIR:-/tmp/ctr_ooc}
  B="$BUILD/bench/bench_ooc"
  NREP=${OOC_REPEATS:-3}
  # OOC_N, OOC_VIEWS, OOC_SEQ_BYTES: smaller sizes for a dry run (BENCH_CPU=1 runs it on the CPU)
  ON=${OOC_N:-2048} SEQ=${OOC_SEQ_BYTES:-8G}
  rm -rf "$D" "$LOGS/ooc" && mkdir -p "$D" "$LOGS/ooc"
  : > "$LOGS/ooc.log"
  say "ooc: $(df -h "$D" | tail -1)"
  R="" W=""
  ooc_gen() { # [--u16]
    rm -f "$D/proj.raw"
    "$B" gen --dir "$D" --n "$ON" --views "${OOC_VIEWS:-1200}" "$@" >> "$LOGS/ooc.log" 2>&1
    say "ooc gen $* rc=$?"
    if [ -z "$R" ]; then # the older method's rates, kept as extra fields
      local o
      o=$("$B" floor --sequential --in "$D/proj.raw" --read-bytes "$SEQ" --out "$D/floor.bin" \
            --out-bytes "$SEQ" --name sequential --json "$LOGS/ooc/sequential.json" 2>> "$LOGS/ooc.log")
      echo "$o" >> "$LOGS/ooc.log"
      rm -f "$D/floor.bin"
      R=$(awk '$1 == "read_rate" { print $2 }' <<< "$o") W=$(awk '$1 == "write_rate" { print $2 }' <<< "$o")
      say "disk alone (direct I/O, 1 GiB requests, $SEQ each way): read ${R:-?} B/s, write ${W:-?} B/s"
    fi
  }
  ooc_floor() { # TAG OUT_BYTES: the floor's seconds on stdout
    local o
    o=$("$B" floor --in "$D/proj.raw" --out "$D/floor.bin" --out-bytes "$2" --name "$1" \
          --json "$LOGS/ooc/floor_$1.json" 2>> "$LOGS/ooc.log")
    echo "$o" >> "$LOGS/ooc.log"
    rm -f "$D/floor.bin"
    awk '$1 == "floor_seconds" { print $2 }' <<< "$o"
  }
  ooc_run() { # NAME TAG FLOOR [ARGS...]
    local name=$1 tag=$2 fl=${3:-0}
    shift 3
    "$B" run --dir "$D" --name "$name" --floor "$fl" --read-rate "${R:-0}" --write-rate "${W:-0}" \
      --json "$LOGS/ooc/run_$tag.json" "$@" >> "$LOGS/ooc.log" 2>&1
    local rc=$?
    rm -f "$D/vol.nrrd"
    say "ooc $tag rc=$rc : $(grep -A1 "^$name:" "$LOGS/ooc.log" | tail -1 | sed -e 's/^ *//' -e 's/;.*//')"
  }
  ooc_merge() {
    python3 - "$LOGS/ooc" "$OUT/ooc.json" "$NREP" <<'PY'
import glob, json, statistics, sys
d, out, nrep = sys.argv[1], sys.argv[2], sys.argv[3]
groups, header = {}, None
for f in sorted(glob.glob(d + "/run_*.json")):
    r = json.load(open(f))
    header = header or r
    groups.setdefault(r["cases"][0]["name"], []).append(r["cases"][0])
floors = [json.load(open(f))["cases"][0] for f in sorted(glob.glob(d + "/floor_*.json"))]
seq = glob.glob(d + "/sequential.json")
if header:
    cases = []
    for name, runs in groups.items():
        secs = [c["seconds"] for c in runs]
        fl = [c["floor_seconds"] for c in runs]
        med = sorted(runs, key=lambda c: c["seconds"])[len(runs) // 2]
        case = dict(med)
        case.update({"seconds": statistics.median(secs), "runs": secs, "repeats": len(runs),
                     "floor_seconds": statistics.median(fl), "floor_runs": fl,
                     "ratio_to_floor": statistics.median(secs) / statistics.median(fl) if min(fl) > 0 else None,
                     "ratio_runs": [s / f if f > 0 else None for s, f in zip(secs, fl)],
                     "busy_of": "the median run"})
        cases.append(case)
    base = {c["name"]: c for c in cases}
    for c in cases:
        unforced = base.get(c["name"].replace("-gpu8G", ""))
        if unforced is not c and unforced:
            c["ratio_to_unforced"] = c["seconds"] / unforced["seconds"]
    res = {"gpu": header["gpu"], "date": header["date"], "revision": header["revision"],
           "command": "scripts/gpu-check.sh OUT ooc (OOC_REPEATS=%s: per repeat bench_ooc floor, then "
                      "bench_ooc run)" % nrep,
           "floor_method": floors[0]["mode"] + ": the run's input read while an output-sized file is written, "
                           "direct I/O, 1 GiB requests, fsync; wall time until both finish" if floors else None,
           "cases": cases, "floors": floors,
           "sequential": json.load(open(seq[0]))["cases"][0] if seq else None}
    json.dump(res, open(out, "w"), indent=1)
    for c in cases:
        print("median %s: %.2f s, floor %.2f s, ratio %s (runs %s)" % (c["name"], c["seconds"], c["floor_seconds"],
              "%.3f" % c["ratio_to_floor"] if c["ratio_to_floor"] else "-", c["runs"]))
PY
  }
  for kase in ${OOC_CASES:-f32 u16 memory}; do
    case $kase in
      f32)
        ooc_gen
        for rep in $(seq 1 "$NREP"); do
          fl=$(ooc_floor f32-r$rep $((ON * ON * ON * 4)))
          say "ooc floor f32 r$rep: ${fl:-failed} s"
          ooc_run ooc-$ON-f32 f32_r$rep "$fl"
          ooc_run ooc-$ON-f32-gpu8G f32_gpu8G_r$rep "$fl" --gpu-budget 8G
        done
        ooc_merge | tee -a "$LOGS/summary.txt" ;;
      u16)
        ooc_gen --u16
        for rep in $(seq 1 "$NREP"); do
          fl=$(ooc_floor u16-r$rep $((ON * ON * ON * 2)))
          say "ooc floor u16 r$rep: ${fl:-failed} s"
          ooc_run ooc-$ON-u16 u16_r$rep "$fl" --u16
        done
        ooc_merge | tee -a "$LOGS/summary.txt" ;;
      memory)
        rm -f "$D/proj.raw"
        "$B" memory --n 1024 --views 1200 --repeats 3 --json "$OUT/ooc_memory.json" >> "$LOGS/ooc.log" 2>&1
        say "ooc memory rc=$? : $(grep '^memory' "$LOGS/ooc.log" | tail -1)" ;;
      *) say "ooc: unknown case '$kase' in OOC_CASES (f32, u16, memory)" ;;
    esac
  done
  rm -rf "$D"
fi

if has fbp; then
  # Parallel-beam kernels on Chilingaryan et al. 2020's benchmark (2048 angles x 2048 bins ->
  # 2048^2 slices, data on the GPU), GUPS and accuracy per kernel
  # (FBP_KERNELS: a kernel list instead of all, e.g. alu2 for the ASTRA
  # comparison alone; the 1024^2 quality run is then skipped). Then (issue
  # 26) our end to end over 2048 slices from pinned and from pageable memory,
  # median of 3 each, and with astra, ASTRA's FBP_CUDA as a user with 2048
  # slices runs it (objects created once, all 2048 slices per run, median of
  # ASTRA_FBP_RUNS = 3; its input tiled from the dumped sinograms).
  # Estimate (H100): kernels ~1-1.5 min, end to end ~1.5 min, ASTRA ~3.5-5.5
  # min (32 GiB tiled, then 3 x 2048 slices at ~30-50 ms), memcheck ~1 min.
  say "fbp kernels"
  FD=/tmp/ctr_fbp_dump
  mkdir -p "$FD"
  "$BUILD/bench/bench_fbp" --n 2048 --angles 2048 --slices ${FBP_SLICES:-8} --repeats 5 \
    ${FBP_KERNELS:+--kernels $FBP_KERNELS} --json "$OUT/fbp_kernels.json" --dump "$FD" > "$LOGS/fbp.log" 2>&1
  say "fbp rc=$?"
  tee -a "$LOGS/summary.txt" < "$LOGS/fbp.log"
  if [ -z "${FBP_KERNELS:-}" ]; then
    # The approximate modes' quality on a 1024^2 Shepp-Logan slice (Chilingaryan et al. 2020 Figs. 7, 18).
    "$BUILD/bench/bench_fbp" --n 1024 --angles 1024 --slices 4 --repeats 3 \
      --json "$OUT/fbp_kernels_1024.json" > "$LOGS/fbp_1024.log" 2>&1
    say "fbp 1024 rc=$?"
    tee -a "$LOGS/summary.txt" < "$LOGS/fbp_1024.log"
    # Past the 2048 layers of one texture (issue 41: every kernel was wrong there
    # until 2026-12): each kernel's accuracy at 3000 angles, rc 2 if any is off.
    "$BUILD/bench/bench_fbp" --n 1024 --angles 3000 --slices 4 --repeats 3 --check \
      --json "$OUT/fbp_kernels_3000.json" > "$LOGS/fbp_3000.log" 2>&1
    say "fbp 3000 angles rc=$?"
    tee -a "$LOGS/summary.txt" < "$LOGS/fbp_3000.log"
  fi
  if [ "${FBP_E2E:-1}" = 1 ]; then
    "$BUILD/bench/bench_fbp" --e2e --n 2048 --angles 2048 --slices 2048 --memory both --repeats 3 \
      --json "$OUT/fbp_e2e.json" > "$LOGS/fbp_e2e.log" 2>&1
    say "fbp end to end rc=$?"
    grep "^end to end" "$LOGS/fbp_e2e.log" | tee -a "$LOGS/summary.txt" "$OUT/progress.txt"
  fi
  if has astra; then
    say "ASTRA FBP_CUDA as a user with 2048 slices runs it"
    with_astra python3 "$ROOT/bench/astra_fbp.py" "$FD" 2048 2048 ${FBP_SLICES:-8} "$OUT/astra_fbp.json" \
      --slices 2048 --runs ${ASTRA_FBP_RUNS:-3} --ours-e2e-json "$OUT/fbp_e2e.json" > "$LOGS/astra_fbp.log" 2>&1
    say "astra fbp rc=$?"
    grep -E "^(input|ASTRA|ours)" "$LOGS/astra_fbp.log" | tee -a "$LOGS/summary.txt"
  fi
  rm -rf "$FD"
  (cd "$BUILD/tests" && compute-sanitizer --tool memcheck --error-exitcode 9 ./test_gpu_fbp) \
    > "$LOGS/sanitizer_fbp.log" 2>&1
  say "memcheck fbp rc=$? : $(grep -E 'ERROR SUMMARY' "$LOGS/sanitizer_fbp.log" | tail -1)"
fi

if has sync; then
  # Issue 24: 2048 uint16 projections of 2048^2 (DXchange-style HDF5, one chunk per
  # projection) to 2048 slices of 2048^2 on the same disk, `ctrecon fbp` file to file,
  # against the floor of this disk for these files: reading the input and writing the
  # output at once (two dd with direct I/O running together, 1 GiB requests), medians
  # of 3 each; float32 and uint16 output, without and with ring removal and Paganin.
  D=${SYNC_DIR:-/tmp/ctr_sync}
  N=${SYNC_N:-2048}
  rm -rf "$D" && mkdir -p "$D"
  say "sync: $(df -h "$D" | tail -1)"
  "$BUILD/bench/bench_sync" gen --dir "$D" --n "$N" --angles "$N" > "$LOGS/sync.log" 2>&1
  say "sync gen rc=$?"
  IN=$(stat -c %s "$D/scan.h5")
  sync_floor() { # OUT_BYTES: median of 3 concurrent dd (read the input, write OUT_BYTES)
    local out=$1 gib=$(( ($1 + (1 << 30) - 1) >> 30 )) t
    for i in 1 2 3; do
      sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null
      t=$(date +%s.%N)
      dd if="$D/scan.h5" of=/dev/null bs=1G iflag=direct 2>/dev/null &
      dd if=/dev/zero of="$D/floor.bin" bs=1G count=$gib oflag=direct conv=fsync 2>/dev/null
      wait
      awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f\n", b - a }'
      rm -f "$D/floor.bin"
    done | sort -n | sed -n 2p
  }
  F32=$(( N * N * N * 4 )) U16=$(( N * N * N * 2 ))
  FLOOR32=$(sync_floor $F32) FLOOR16=$(sync_floor $U16)
  say "sync floor (concurrent read $IN B + write, direct I/O, median of 3): float32 ${FLOOR32} s, uint16 ${FLOOR16} s"
  sync_case() { # BIN RUNS NAME ARGS...: median of RUNS runs of BIN fbp, seconds
    local bin=$1 runs=$2 name=$3 t
    shift 3
    for i in $(seq "$runs"); do
      sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null
      rm -f "$D"/rec.* "$D"/rec.raw.partial*
      t=$(date +%s.%N)
      "$bin" fbp --projections "$D/scan.h5:/exchange/data" --flat "$D/flat.h5:/data" \
        --dark "$D/dark.h5:/data" --angles "$D/angles.txt" --axis $(( (N - 1) / 2 )).5 \
        --out "$D/rec.raw" --quiet --timings "$@" 2> "$LOGS/sync_run.err" || echo "$name failed" >> "$LOGS/sync_run.err"
      awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f\n", b - a }'
      # each run's --timings in OUT as it ends (a run cut short keeps the earlier ones)
      sed "s/^/$name run $i: /" "$LOGS/sync_run.err" | tee -a "$LOGS/sync.log" >> "$OUT/sync_timings.txt"
      rm -f "$D/rec.raw"
    done | sort -n | sed -n "$(( (runs + 1) / 2 ))p"
  }
  : > "$LOGS/sync_cases.txt"
  # sync_cases BIN SUFFIX CASES: the named cases by BIN, recorded as NAME+SUFFIX.
  # SYNC_BASE (a build folder, optional) runs SYNC_BASE_CASES (default f32) by its
  # ctrecon too, SYNC_BASE_RUNS times (default: as the others), named NAME@base: a branch against the code it started from,
  # on the same data, disk and floor.
  sync_cases() {
    local bin=$1 suffix=$2 wanted=$3
    # SYNC_CASES (comma list of names, default all but u16-b256, u16-ra6, u16-pr8
    # and u16-pr1) picks the cases, so that the stage can be split over calls.
    # u16-b256 tested the read-size hypothesis of bench/NOTES.md (refuted,
    # 2026-11-27 fourth session); u16-ra6 the next one (six bands read ahead
    # instead of two: refuted). u16-pr8 / u16-pr1: the HDF5 band read by 8
    # threads of pread (the default since read_threads) / through one H5Dread
    # (before it), on the same machine.
    for c in "f32" "u16 --out-dtype uint16 --out-range -0.01:0.05" \
             "u16-b256 --out-dtype uint16 --out-range -0.01:0.05 --batch 256" \
             "u16-ra6 --out-dtype uint16 --out-range -0.01:0.05 --read-ahead 6" \
             "u16-pr8 --out-dtype uint16 --out-range -0.01:0.05 --tune read_threads=8" \
             "u16-pr1 --out-dtype uint16 --out-range -0.01:0.05 --tune read_threads=1" \
             "f32-rings --stripe sorting" "f32-paganin --paganin-delta-beta 100 --energy 25 --distance 100 --pixel-size 0.00065" \
             "u16-rings-paganin --out-dtype uint16 --out-range -0.01:0.05 --stripe sorting --paganin-delta-beta 100 --energy 25 --distance 100 --pixel-size 0.00065"; do
      set -- $c
      name=$1
      shift
      if [[ ",$wanted," != *",$name,"* ]]; then
        continue
      fi
      # SYNC_RUNS runs of the plain cases (default 3), SYNC_RUNS_CORR of those with
      # corrections (default 3; 1 keeps the stage within one 10-minute call)
      # (by their options: u16-pr8's name has a dash too, and got one run on 2026-11-27)
      case " $* " in *" --stripe "*|*" --paganin-delta-beta "*) runs=${SYNC_RUNS_CORR:-3} ;; *) runs=${SYNC_RUNS:-3} ;; esac
      [ -n "$suffix" ] && runs=${SYNC_BASE_RUNS:-$runs}
      t=$(sync_case "$bin" "$runs" "$name$suffix" "$@")
      case $name in u16*) fl=$FLOOR16 ;; *) fl=$FLOOR32 ;; esac
      say "sync $name$suffix: ${t} s, floor ${fl} s, ratio $(awk -v a="$t" -v b="$fl" 'BEGIN { if (b > 0) printf "%.3f", a / b }')"
      echo "$name$suffix $t $fl $runs $*" >> "$LOGS/sync_cases.txt"
    done
  }
  sync_cases "$BUILD/ctrecon" "" "${SYNC_CASES:-f32,u16,f32-rings,f32-paganin,u16-rings-paganin}"
  [ -n "${SYNC_BASE:-}" ] && sync_cases "$SYNC_BASE/ctrecon" @base "${SYNC_BASE_CASES:-f32}"
  rm -rf "$D"
  python3 - "$LOGS/sync_cases.txt" "$OUT/sync.json" "$N" "$IN" "$(tail -n +2 "$LOGS/gpu.txt" | head -1)" <<'PY'
import json, sys, datetime, os
cases = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 3: continue
    t, fl = float(f[1] or "nan"), float(f[2] or "nan")
    cases.append({"name": f[0], "seconds_median": t, "runs": int(f[3]),
                  "floor_seconds_median_of_3": fl,
                  "ratio_to_floor": t / fl if fl > 0 else None, "options": " ".join(f[4:])})
n = int(sys.argv[3])
json.dump({"gpu": sys.argv[5], "date": datetime.date.today().isoformat(),
           "revision": os.environ.get("CTR_GIT_REVISION", "unknown"),
           "command": "ctrecon fbp (scripts/gpu-check.sh sync)",
           "data": "%d uint16 projections of %d^2 (HDF5, one chunk a projection) -> %d slices of %d^2" % (n, n, n, n),
           "input_bytes": int(sys.argv[4]),
           "floor": "two dd at once (read the input, write the output size), direct I/O, 1 GiB requests",
           "cases": cases}, open(sys.argv[2], "w"), indent=2)
PY
  say "sync json rc=$?"
  tee -a "$LOGS/summary.txt" < "$LOGS/sync_cases.txt"
fi

if has pet; then
  # DIRECT TOF-PET: its tests (also in the test stage), the issue 6 benchmark,
  # memcheck of the GPU backend.
  (cd "$BUILD" && ctest -R pet --output-on-failure) > "$LOGS/pet_tests.log" 2>&1
  say "pet tests rc=$? : $(grep -E 'tests passed|tests failed' "$LOGS/pet_tests.log")"
  "$BUILD/bench/bench_pet" --json "$OUT/pet.json" ${PET_EVENTS:+--events $PET_EVENTS} \
    > "$LOGS/pet.log" 2>&1
  say "bench_pet rc=$?"
  tee -a "$LOGS/summary.txt" < "$LOGS/pet.log"
  (cd "$BUILD/tests" && compute-sanitizer --tool memcheck --error-exitcode 9 ./test_gpu_pet) \
    > "$LOGS/sanitizer_pet.log" 2>&1
  say "memcheck pet rc=$? : $(grep -E 'ERROR SUMMARY' "$LOGS/sanitizer_pet.log" | tail -1)"
fi

if has iterative; then
  # Iterative CT (issue 23): the tests (also in the test stage) and memcheck
  # of the GPU variants, the benchmark (medians of 3), ASTRA on case A's data.
  # ITER_TESTS=0 skips the tests and memcheck (a second call for more cases).
  if [ "${ITER_TESTS:-1}" = 1 ]; then
    (cd "$BUILD" && ctest -R iterat --output-on-failure -V) > "$LOGS/iterative_tests.log" 2>&1
    say "iterative tests rc=$? : $(grep -E 'tests passed|tests failed' "$LOGS/iterative_tests.log")"
    grep -E "GPU vs CPU|adjoint |slab-wise|slabs |FDK error|fast pair|CHECK failed" \
      "$LOGS/iterative_tests.log" | tee -a "$LOGS/summary.txt"
    for t in test_gpu_iterative test_gpu_iterate; do
      (cd "$BUILD/tests" && compute-sanitizer --tool memcheck --error-exitcode 9 ./$t) \
        > "$LOGS/sanitizer_$t.log" 2>&1
      say "memcheck $t rc=$? : $(grep -E 'ERROR SUMMARY' "$LOGS/sanitizer_$t.log" | tail -1)"
    done
  fi
  dump=/tmp/ctr_dump_iter
  rm -rf "$dump" && mkdir -p "$dump"
  cases=${ITER_CASES:-fp-A,fp-B,iter-A,cgls-B20,fista-256}
  if [ "$cases" != none ]; then
    say "bench_iterative --cases $cases"
    "$BUILD/bench/bench_iterative" --cases "$cases" --repeats 3 --json "$OUT/bench_iterative.json" \
      --dump "$dump" ${ITER_ARGS:-} > "$LOGS/bench_iterative.log" 2>&1
    say "bench_iterative rc=$?"
    grep -E "^case" "$LOGS/bench_iterative.log" | tee -a "$LOGS/summary.txt"
  fi
  if [ "${ITER_2048:-0}" = 1 ]; then
    say "bench_iterative --cases cgls-2048"
    "$BUILD/bench/bench_iterative" --cases cgls-2048 --json "$OUT/bench_iterative_2048.json" ${ITER_ARGS:-} \
      > "$LOGS/bench_iterative_2048.log" 2>&1
    say "bench_iterative 2048 rc=$?"
    grep -E "^case" "$LOGS/bench_iterative_2048.log" | tee -a "$LOGS/summary.txt"
  fi
  if has astra && [ -s "$dump/proj.raw" ]; then
    say "ASTRA FP3D_CUDA, SIRT3D_CUDA, CGLS3D_CUDA on case A's data"
    (cd "$ROOT/bench" && with_astra python3 astra_iterative.py "$dump" "$OUT/astra_iterative.json" \
      --repeats 3 --ours-json "$OUT/bench_iterative.json") > "$LOGS/astra_iterative.log" 2>&1
    say "astra iterative rc=$?"
    grep -E "FP3D|SIRT3D|CGLS3D|speedup" "$LOGS/astra_iterative.log" | tee -a "$LOGS/summary.txt"
  fi
  rm -rf "$dump"
fi

# RabbitCT data set (496 views of 1248 x 960, short scan, FP64 references on
# the GPU), made once per machine.
rct=/tmp/ctr_rabbit.rct
if (has rabbitct || has rabbitsweep) && [ ! -s $rct ]; then
  say "rabbitct-make"
  "$BUILD/ctrecon" rabbitct-make --out $rct --sizes ${RCT_MAKE_SIZES:-128,256,512,1024} --device cuda \
    > "$LOGS/rabbitct_make.log" 2>&1
  say "rabbitct-make rc=$? : $(tail -3 "$LOGS/rabbitct_make.log" | tr '\n' ' ')"
fi
# rct_run NAME L INTERP [OPTION...]: one runner pass, the module through
# dlopen, under the published runner's protocol (ctrecon rabbitct's default);
# OPTIONs go to ctrecon rabbitct (--projection-buffers WHO, --tune KEY=VALUE:
# the module's tuning table, docs/tuning.md).
rct_run() {
  local name=$1 L=$2 interp=$3
  shift 3
  "$BUILD/ctrecon" rabbitct $rct --size $L --device cuda --interp $interp "$@" \
    --json "$LOGS/rabbitct_$name.json" --force > "$LOGS/rabbitct_$name.log" 2>&1  # a rerun's replaces
  say "rabbitct $name (L=$L $interp $*) rc=$?"
  grep -iE "sum|GUPS|RMSE|first calls|buffers " "$LOGS/rabbitct_$name.log" | tee -a "$LOGS/summary.txt" "$OUT/progress.txt"
}

if has rabbitct; then
  # RCT_OWNERS: who allocates the projection buffers (module: the module's
  # pinned buffers, its default; runner: pageable buffers after Load).
  for L in ${RCT_SIZES:-128 256 512 1024}; do
    for interp in ${RCT_INTERPS:-precise exact texture}; do
      [ "$interp" = texture ] && [ "$L" != 512 ] && continue
      for owner in ${RCT_OWNERS:-module runner}; do
        for rep in $(seq 1 ${RCT_REPEAT:-3}); do
          rct_run ${L}_${interp}_${owner}_r$rep $L $interp --projection-buffers $owner
        done
      done
    done
  done
  python3 - "$LOGS" "$OUT/rabbitct.json" <<'PY'
import glob, json, statistics, sys
files = sorted(glob.glob(sys.argv[1] + "/rabbitct_*.json"))
runs = [json.load(open(f)) for f in files]
if runs:
    out = {k: runs[0][k] for k in ("gpu", "date", "revision")}
    out["command"] = "ctrecon rabbitct (published protocol; --projection-buffers module|runner)"
    out["cases"] = [dict(c, run=f.split("rabbitct_")[-1][:-5], buffers_owner=r["buffers_owner"],
                         interp=r["interp"], protocol=r["protocol"])
                    for r, f in zip(runs, files) for c in r["cases"]]
    groups = {}
    for c in out["cases"]:
        groups.setdefault(c["run"].rsplit("_r", 1)[0], []).append(c)
    out["medians"] = {k: {"seconds": statistics.median(c["seconds"] for c in v),
                          "rmse_hu": statistics.median(c["rmse_hu"] for c in v if c["rmse_hu"] is not None)
                                     if any(c["rmse_hu"] is not None for c in v) else None,
                          "runs": len(v)} for k, v in groups.items()}
    json.dump(out, open(sys.argv[2], "w"), indent=2)
    for k, v in out["medians"].items():
        print("median", k, v)
PY
fi

if has hostxfer; then
  # Pinning a runner's pageable buffers in place vs uploading them as they are.
  nvcc -O2 -arch=sm_90 -Xcompiler -fopenmp "$ROOT/bench/experiments/host_transfer.cu" \
    -o "$LOGS/host_transfer" > "$LOGS/host_transfer.log" 2>&1 &&
    for mib in 567 2268; do "$LOGS/host_transfer" $mib; done >> "$LOGS/host_transfer.log" 2>&1
  say "host transfer rc=$?"
  tee -a "$LOGS/summary.txt" < "$LOGS/host_transfer.log"
fi

if has rabbitsweep; then
  # Launch shape and chunk schedule of the general kernel at L = 512, and
  # one ncu profile of a full-size launch (bench/NOTES.md, issue 7).
  for zb in 16:32x4 16:32x8 16:8x16 32:32x4 8:32x4; do
    rct_run sweep_z${zb%%:*}_${zb##*:} 512 precise --tune bp_slices=${zb%%:*} --tune bp_block=${zb##*:}
  done
  for ch in 1,1 4,8 8,16 1,32 32,32; do
    rct_run sweep_chunks_${ch/,/_} 512 precise --tune bp_chunks=$ch
  done
  if command -v ncu > /dev/null; then
    ncu --clock-control none -k regex:bpg_kernel -s 3 -c 1 \
      --section SpeedOfLight --section Occupancy --section WarpStateStats \
      --section InstructionStats --section LaunchStats --section MemoryWorkloadAnalysis \
      --section SchedulerStats \
      "$BUILD/ctrecon" rabbitct $rct --size 512 --device cuda --interp precise \
      --tune bp_chunks=32,32 > "$LOGS/ncu_rabbitct_512.txt" 2>&1
    say "ncu rc=$?"
    cp "$LOGS/ncu_rabbitct_512.txt" "$OUT/"
  fi
fi

if has mpi; then
  # The distributed FDK (issue 21): the overhead of ranks against one process with
  # the same cores (target below 5 %), 2 ranks sharing the GPU, bytes read per rank.
  say "bench-mpi (cpu, cuda)"
  SIZE=${MPI_SIZE:-512} DATA=${MPI_DIR:-/tmp/ctr_mpi} \
    bash "$ROOT/scripts/bench-mpi.sh" "$BUILD" "$OUT" all > "$LOGS/bench_mpi.log" 2>&1
  say "bench-mpi rc=$?"
  grep -E "^(case|  rank|cpu|cuda)" "$LOGS/bench_mpi.log" | tee -a "$LOGS/summary.txt"
  "$BUILD/bench/bench_mpi" --model --json "$OUT/mpi_model.json" >> "$LOGS/summary.txt" 2>&1
  rm -rf "${MPI_DIR:-/tmp/ctr_mpi}"
fi

if has python; then
  # The Python package (issue 22) on the GPU: built here with the image's
  # scikit-build-core, CMake and CuPy, cffi and pycparser from .whl/ (the image
  # lacks them), into /tmp/ctr_py; then the GPU tests (CuPy arrays in place:
  # pointer check, same bits as the host path) and the binding's overhead on
  # FDK at 512^3 against the C benchmark.
  say "python: package build, GPU tests (CuPy), binding overhead"
  PYSITE=/tmp/ctr_py
  rm -rf "$PYSITE" && mkdir -p "$PYSITE"
  python3 -m pip install -q --no-index --no-deps --target "$PYSITE" "$ROOT"/.whl/cffi-*.whl \
    "$ROOT"/.whl/pycparser-*.whl > "$LOGS/python_build.log" 2>&1
  PYTHONPATH=$PYSITE CMAKE_ARGS="${CMAKE_EXTRA[*]} -DCMAKE_CUDA_ARCHITECTURES=90" \
    python3 -m pip install -v --no-index --no-deps --no-build-isolation --target "$PYSITE" \
    "$ROOT" >> "$LOGS/python_build.log" 2>&1
  say "python build rc=$? ($(PYTHONPATH=$PYSITE python3 -c 'import pyctrecon; print(pyctrecon.__version__, pyctrecon.features(), pyctrecon.cuda_device_count(), "GPU(s)")' 2>&1 | tail -1))"
  (cd "$ROOT/python/tests" && PYTHONPATH=$PYSITE python3 -m pytest -v -p no:cacheprovider \
    test_gpu.py test_docs.py test_operators.py -rs) > "$LOGS/python_gpu_tests.log" 2>&1
  say "python GPU tests rc=$? : $(tail -1 "$LOGS/python_gpu_tests.log")"
  PYTHONPATH=$PYSITE python3 "$ROOT/python/bench/binding_overhead.py" --repeats 7 \
    ${BUILD:+--c-bench "$BUILD/bench/bench_fdk_cuda"} > "$OUT/python_overhead.json" \
    2> "$LOGS/python_overhead.log"
  say "python overhead rc=$? : $(tr -d '\n' < "$OUT/python_overhead.json" | cut -c1-400)"
fi

cp "$LOGS/summary.txt" "$OUT/summary.txt"
tar -C "$LOGS" -czf "$OUT/logs.tgz" .
rm -rf "$LOGS"
# bundle_results: the device tool returns at most 8 files from OUT; beyond
# that the JSON goes into one results.tgz (tar -xzf results.tgz to read it).
bundle_results() {
  local n
  n=$(find "$OUT" -type f | wc -l)
  if [ "$n" -gt 8 ] && ls "$OUT"/*.json > /dev/null 2>&1; then
    (cd "$OUT" && tar -czf results.tgz ./*.json && rm -f ./*.json)
    echo "== $n files in OUT: the JSON is in results.tgz" | tee -a "$OUT/progress.txt"
  fi
}
bundle_results
