#!/usr/bin/env bash
# What a GPU machine runs (docs/design.md): configure for sm_90, build, ctest -L gpu,
# compute-sanitizer memcheck on every GPU test, the benchmarks with ASTRA side by
# side, logs and JSON into RESULTS_DIR.
#
#   scripts/gpu-check.sh RESULTS_DIR [STAGES]
#
# BUILD_TARGETS (optional): build only these targets.
# STAGES is a comma list of build,test,sanitize,benchA,benchB,astra,rabbitct,rabbitsweep,hostxfer,ooc,fbp,pet,
# iterative (default: all). iterative: the iterative CT tests and memcheck (ITER_TESTS=0
# skips them), its benchmark (issue 23; ITER_CASES picks the cases, default all but
# cgls-2048, "none" for none; ITER_2048=1 adds the 2048^3 CGLS, about 10 minutes and 120 GB
# of host memory, in its own JSON), and ASTRA's FP3D/SIRT3D/CGLS3D on case A's data when
# astra is among the stages (needs the fp-A case in the same call). ooc: the out-of-core benchmark on the local disk (OOC_DIR,
# default /tmp/ctr_ooc; needs ~55 GB free, deleted at the end). benchA runs the full kernel sweep. The machine may lack FFTW, cJSON,
# libtiff and libpng: a tree carrying unpacked Debian packages in .deps/ (see
# bench/NOTES.md) builds against those. ASTRA comes from wheels in .whl/.
set -uo pipefail
OUT=${1:?usage: scripts/gpu-check.sh RESULTS_DIR [STAGES]}
STAGES=${2:-build,test,sanitize,benchA,benchB,astra,rabbitct,ooc,fbp,pet,iterative}
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
  (cd "$BUILD" && CTR_TEST_QUICK=1 ctest -T memcheck -L gpu --output-on-failure) \
    > "$LOGS/sanitizer.log" 2>&1
  say "memcheck rc=$? : $(grep -E 'tests passed|tests failed' "$LOGS/sanitizer.log" | tail -1)"
  grep -E "Memory checking results|Defects|ERROR SUMMARY|Failed|\*\*\*" "$LOGS/sanitizer.log" \
    | tee -a "$LOGS/summary.txt" | head -40
fi

for c in A B; do
  has "bench$c" || continue
  sweep=""
  [ "$c" = A ] && [ "${SWEEP:-1}" = 1 ] && sweep="--sweep"
  dump=/tmp/ctr_dump_$c
  mkdir -p "$dump"
  say "bench case $c $sweep"
  "$BUILD/bench/bench_fdk_cuda" --case $c $sweep --repeats 3 --json "$OUT/bench_$c.json" \
    --dump "$dump" > "$LOGS/bench_$c.log" 2>&1
  say "bench $c rc=$?"
  grep -E "end to end" "$LOGS/bench_$c.log" | tee -a "$LOGS/summary.txt"
  sort -t' ' -k1,1 "$LOGS/bench_$c.log" | awk '$NF ~ /^[0-9.]+$/ && NF == 6' | sort -k6 -n -r | head -8 \
    | tee -a "$LOGS/summary.txt"
  if has astra; then
    say "ASTRA FDK_CUDA on case $c"
    with_astra python3 "$ROOT/bench/astra_compare.py" "$dump" $c "$OUT/astra_$c.json" --repeats 3 \
      --ours-json "$OUT/bench_$c.json" > "$LOGS/astra_$c.log" 2>&1
    say "astra $c rc=$?"
    grep -E "seconds|difference|speedup|scale|flips" "$LOGS/astra_$c.log" | tee -a "$LOGS/summary.txt"
  fi
  rm -rf "$dump"
done

if has ooc; then
  # Lu et al. 2016's large dataset through the streamed pipeline, file to file, with
  # the disk measured in the same call (direct I/O, 4 GiB) for the I/O floor.
  D=${OOC_DIR:-/tmp/ctr_ooc}
  B="$BUILD/bench/bench_ooc"
  rm -rf "$D" && mkdir -p "$D"
  say "ooc: $(df -h "$D" | tail -1)"
  # 1 GiB requests, as the pipeline's; best of two passes each way: the
  # fastest rates make the strictest floor.
  : > "$LOGS/dd_write.log"
  : > "$LOGS/dd_read.log"
  for pass in 1 2; do
    dd if=/dev/zero of="$D/dd.bin" bs=1G count=8 oflag=direct conv=fsync 2>> "$LOGS/dd_write.log"
    dd if="$D/dd.bin" of=/dev/null bs=1G iflag=direct 2>> "$LOGS/dd_read.log"
    rm -f "$D/dd.bin"
  done
  rate() { awk '/copied/ { for (i = 1; i <= NF; i++) if ($i == "s,") { r = $1 / $(i - 1); if (r > m) m = r } }
                END { printf "%.0f", m }' "$1"; }
  W=$(rate "$LOGS/dd_write.log") R=$(rate "$LOGS/dd_read.log")
  say "disk (direct I/O, 1 GiB requests, best of 2): read $R B/s, write $W B/s"
  run_case() { # NAME JSON ARGS...
    local name=$1 json=$2; shift 2
    "$B" run --dir "$D" --name "$name" --read-rate "$R" --write-rate "$W" --json "$OUT/$json" "$@" \
      >> "$LOGS/ooc.log" 2>&1
    say "ooc $name rc=$?"
  }
  "$B" gen --dir "$D" --n 2048 --views 1200 >> "$LOGS/ooc.log" 2>&1
  say "ooc gen float32 rc=$?"
  run_case ooc-2048-f32 ooc_f32.json
  run_case ooc-2048-f32-gpu8G ooc_f32_gpu8G.json --gpu-mem 8G
  rm -f "$D/proj.raw"
  "$B" gen --dir "$D" --n 2048 --views 1200 --u16 >> "$LOGS/ooc.log" 2>&1
  say "ooc gen uint16 rc=$?"
  run_case ooc-2048-u16 ooc_u16.json --u16
  rm -rf "$D"
  "$B" memory --n 1024 --views 1200 --json "$OUT/ooc_memory.json" >> "$LOGS/ooc.log" 2>&1
  say "ooc memory rc=$?"
  grep -vE "^ *$" "$LOGS/ooc.log" | tee -a "$LOGS/summary.txt" | tail -30
fi

if has fbp; then
  # Parallel-beam kernels on Chilingaryan et al. 2020's benchmark (2048 angles x 2048 bins ->
  # 2048^2 slices, data on the GPU), GUPS and accuracy per kernel.
  say "fbp kernels"
  FD=/tmp/ctr_fbp_dump
  mkdir -p "$FD"
  "$BUILD/bench/bench_fbp" --n 2048 --angles 2048 --slices ${FBP_SLICES:-8} --repeats 5 \
    --json "$OUT/fbp_kernels.json" --dump "$FD" > "$LOGS/fbp.log" 2>&1
  say "fbp rc=$?"
  tee -a "$LOGS/summary.txt" < "$LOGS/fbp.log"
  # The approximate modes' quality on a 1024^2 Shepp-Logan slice (Chilingaryan et al.
  # 2020, Figs. 7, 18).
  "$BUILD/bench/bench_fbp" --n 1024 --angles 1024 --slices 4 --repeats 3 \
    --json "$OUT/fbp_kernels_1024.json" > "$LOGS/fbp_1024.log" 2>&1
  say "fbp 1024 rc=$?"
  tee -a "$LOGS/summary.txt" < "$LOGS/fbp_1024.log"
  if [ "${FBP_E2E:-1}" = 1 ]; then
    "$BUILD/bench/bench_fbp" --e2e --n 2048 --angles 2048 --slices 2048 \
      --json "$OUT/fbp_e2e.json" > "$LOGS/fbp_e2e.log" 2>&1
    say "fbp end to end rc=$? : $(tail -1 "$LOGS/fbp_e2e.log")"
  fi
  if has astra; then
    say "ASTRA FBP_CUDA on the same sinograms"
    with_astra python3 "$ROOT/bench/astra_fbp.py" "$FD" 2048 2048 ${FBP_SLICES:-8} \
      "$OUT/astra_fbp.json" --ours-e2e-json "$OUT/fbp_e2e.json" > "$LOGS/astra_fbp.log" 2>&1
    say "astra fbp rc=$?"
    tail -3 "$LOGS/astra_fbp.log" | tee -a "$LOGS/summary.txt"
  fi
  rm -rf "$FD"
  (cd "$BUILD/tests" && compute-sanitizer --tool memcheck --error-exitcode 9 ./test_gpu_fbp) \
    > "$LOGS/sanitizer_fbp.log" 2>&1
  say "memcheck fbp rc=$? : $(grep -E 'ERROR SUMMARY' "$LOGS/sanitizer_fbp.log" | tail -1)"
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
      --dump "$dump" > "$LOGS/bench_iterative.log" 2>&1
    say "bench_iterative rc=$?"
    grep -E "^case" "$LOGS/bench_iterative.log" | tee -a "$LOGS/summary.txt"
  fi
  if [ "${ITER_2048:-0}" = 1 ]; then
    say "bench_iterative --cases cgls-2048"
    "$BUILD/bench/bench_iterative" --cases cgls-2048 --json "$OUT/bench_iterative_2048.json" \
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
    --json "$LOGS/rabbitct_$name.json" > "$LOGS/rabbitct_$name.log" 2>&1
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

cp "$LOGS/summary.txt" "$OUT/summary.txt"
tar -C "$LOGS" -czf "$OUT/logs.tgz" .
rm -rf "$LOGS"
