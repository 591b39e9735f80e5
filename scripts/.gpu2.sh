# Call A: build base benches and the head tree; GPU tests of head; memcheck of the new/changed GPU tests.
set -o pipefail
ln -sfn ../.deps .base/.deps
T0=$(date +%s)
( cd .base && BUILD=$PWD/build-gpu CTR_GIT_REVISION=0713062 BUILD_TARGETS="bench_ooc bench_fbp bench_pet bench_iterative" bash scripts/gpu-check.sh /tmp/base_out build > /tmp/base_build.log 2>&1; echo "base build rc=$?" > /tmp/base_rc ) &
CTR_GIT_REVISION=$(cat .rev) scripts/gpu-check.sh /tmp/h build,test > /tmp/check.log 2>&1; echo "head build+test rc=$? $(( $(date +%s)-T0 ))s"
wait; cat /tmp/base_rc
grep -E "^== " /tmp/check.log | tail -8
L=$(ls -d /tmp/ctr_logs.* | tail -1)
grep -E "Passed|Failed|Skipped|\*\*\*|tests passed" $L/ctest_gpu.log | tail -40
cp $L/ctest_gpu.log $OUT/ctest_gpu.log
export LD_LIBRARY_PATH=/tmp/ctr_runlibs
for t in test_gpu_threads test_gpu_fbp test_gpu_stream; do
  timeout 150 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 build-gpu/tests/$t > /tmp/ms_$t.log 2>&1; echo "memcheck $t rc=$? $(grep -E 'ERROR SUMMARY' /tmp/ms_$t.log | tail -1)"
done
echo "total $(( $(date +%s)-T0 ))s"
