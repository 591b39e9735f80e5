set -o pipefail
ln -sfn ../.deps .base/.deps
( BUILD=$PWD/.base/build-gpu CTR_GIT_REVISION=1a27c45 BUILD_TARGETS="bench_fbp" bash .base/scripts/gpu-check.sh /tmp/base_out build > /tmp/base_build.log 2>&1 ) &
BP=$!
CTR_GIT_REVISION=$(cat .rev) BUILD_TARGETS="bench_fbp test_gpu_fbp_angles" scripts/gpu-check.sh /tmp/h build > /tmp/check.log 2>&1; echo "build rc=$?"
export LD_LIBRARY_PATH=/tmp/ctr_runlibs
build-gpu/tests/test_gpu_fbp_angles > $OUT/angles.txt 2>&1; echo "angles rc=$? $(tail -1 $OUT/angles.txt)"
build-gpu/bench/bench_fbp --n 2048 --angles 2048 --slices 8 --repeats 5 --kernels alu2,tex,tex2,hybrid --json $OUT/fbp_head.json > /dev/null 2>&1; echo "head rc=$?"
wait $BP; echo "base rc=$?"
.base/build-gpu/bench/bench_fbp --n 2048 --angles 2048 --slices 8 --repeats 5 --kernels alu2,tex,tex2,hybrid --json $OUT/fbp_base.json > /dev/null 2>&1; echo "base bench rc=$?"
