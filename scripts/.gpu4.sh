set -o pipefail
ln -sfn ../.deps .base/.deps
( BUILD=$PWD/.base/build-gpu CTR_GIT_REVISION=1a27c45 BUILD_TARGETS=bench_fbp bash .base/scripts/gpu-check.sh /tmp/base_out build > /tmp/base_build.log 2>&1 ) &
BP=$!
CTR_GIT_REVISION=$(cat .rev) scripts/gpu-check.sh $OUT/g build,python > /tmp/check.log 2>&1
echo "check rc=$?"; grep -E "^== (build|ctest|python)" $OUT/g/summary.txt
export LD_LIBRARY_PATH=/tmp/ctr_runlibs
(cd build-gpu && ctest -L gpu --output-on-failure -V) > $OUT/ctest_gpu.log 2>&1
echo "ctest gpu rc=$? $(grep -E 'tests passed|tests failed' $OUT/ctest_gpu.log | tail -1)"
grep -E "10000 angles, hybrid|two threads|Failed|FAIL" $OUT/ctest_gpu.log | head -8
wait $BP; echo "base build rc=$?"
for b in head base; do
  B=build-gpu; [ $b = base ] && B=.base/build-gpu
  echo "=== $b" >> $OUT/bench.txt
  $B/bench/bench_fbp --n 2048 --angles 2048 --slices 8 --repeats 5 --kernels alu2,hybrid >> $OUT/bench.txt 2>&1
  echo "bench $b rc=$?"
done
grep GUPS $OUT/bench.txt | awk '{print $1,$2,$5,$7}'
