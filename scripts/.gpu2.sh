set -o pipefail
ln -sfn ../.deps .base/.deps
( BUILD=$PWD/.base/build-gpu CTR_GIT_REVISION=1a27c45 BUILD_TARGETS="test_gpu_fbp_angles test_gpu_pet bench_fbp" bash .base/scripts/gpu-check.sh /tmp/base_out build > /tmp/base_build.log 2>&1 ) &
BP=$!
CTR_GIT_REVISION=$(cat .rev) scripts/gpu-check.sh /tmp/head_out build > /tmp/check.log 2>&1
echo "head build rc=$?"; tail -3 /tmp/check.log
(cd build-gpu && ctest -L gpu --output-on-failure -V) > $OUT/ctest_gpu.log 2>&1
echo "ctest gpu rc=$? $(grep -E 'tests passed|tests failed' $OUT/ctest_gpu.log | tail -1)"
grep -E "Failed|\*\*\*|FAIL" $OUT/ctest_gpu.log | head -20
wait $BP; echo "base build rc=$?"; tail -2 /tmp/base_build.log
export LD_LIBRARY_PATH=/tmp/ctr_runlibs
for i in 1 2; do echo "=== base angles run $i" >> $OUT/base.txt; .base/build-gpu/tests/test_gpu_fbp_angles >> $OUT/base.txt 2>&1; echo "base angles run $i rc=$? $(tail -1 $OUT/base.txt)"; done
echo "=== base pet" >> $OUT/base.txt; .base/build-gpu/tests/test_gpu_pet >> $OUT/base.txt 2>&1; echo "base pet rc=$? $(grep -E 'two threads|checks' $OUT/base.txt | tail -3 | tr '\n' ' ')"
for b in head base; do
  B=build-gpu; [ $b = base ] && B=.base/build-gpu
  echo "=== $b" >> $OUT/bench.txt
  $B/bench/bench_fbp --n 2048 --angles 2048 --slices 8 --repeats 5 --kernels tex,tex2,tex-mp,tex4h,alu2,hybrid >> $OUT/bench.txt 2>&1
  echo "bench $b rc=$?"
done
S=$(command -v compute-sanitizer)
for t in test_gpu_fbp_angles test_gpu_pet test_gpu_limits test_gpu_fbp; do
  echo "=== $t" >> $OUT/memcheck.txt
  timeout 150 $S --tool memcheck --error-exitcode 9 build-gpu/tests/$t >> $OUT/memcheck.txt 2>&1
  echo "memcheck $t rc=$? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt | tail -1)"
done
