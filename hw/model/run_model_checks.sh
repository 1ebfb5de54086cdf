#!/usr/bin/env bash
# Builds the model targets for CUDA, runs the CPU and GPU tests (compute-sanitizer memcheck on a subset,
# racecheck on the Hopper kernel), prints the attention kernels' resource use, and runs kvtier-model-bench.
# Writes logs and bench.json to $OUT (default ./model-checks) and prints a short summary last. From the
# source root, on an NVIDIA GPU:
#   OUT=/tmp/out hw/model/run_model_checks.sh
# BENCH_ARGS (default: all lengths) are passed to kvtier-model-bench; SANITIZE=0 skips the sanitizers;
# BENCH_TIMEOUT, MEMCHECK_TIMEOUT and RACECHECK_TIMEOUT (seconds) bound the bench and the sanitizer runs.
# The Hopper attention tests run first: when they fail, the rest is skipped (a broken kernel can hang).
set -uo pipefail
OUT=${OUT:-model-checks}
mkdir -p "$OUT"
BUILD=${BUILD:-build-gpu}
SANITIZER=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)

cmake -B "$BUILD" -DKVTIER_SIM=OFF -DKVTIER_GPU=cuda -DKVTIER_BENCHMARKS=ON -DKVTIER_WERROR=${KVTIER_WERROR:-ON} \
  >"$OUT/cmake.log" 2>&1 &&
  cmake --build "$BUILD" -j16 --target kvtier_hw_model_reference_test kvtier_hw_model_gpu_test \
    kvtier_hw_forward_gpu_test kvtier-model-bench >"$OUT/build.log" 2>&1 || { tail -n 30 "$OUT/cmake.log" "$OUT/build.log"; exit 1; }
bin=$BUILD/hw/model
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >"$OUT/device.txt" 2>&1
ptxas_report() {  # $1: arch, $2: source
  "$NVCC" -gencode "arch=compute_$1,code=sm_$1" -std=c++20 -O3 -DKVTIER_GPU_CUDA=1 -Ihw/model -Ihw/kernels -Ihw -Isim/core \
    -Xptxas -v -c "$2" -o /dev/null 2>&1 | grep -E "registers|spill|Performance"
}
{ ptxas_report 90 hw/model/attention.cu; ptxas_report 90a hw/model/attention_hopper.cu; } >"$OUT/ptxas.txt"
timeout 120 "$bin/kvtier_hw_model_gpu_test" --gtest_filter='*Hopper*' >"$OUT/hopper-tests.txt" 2>&1
hopper=$?
if [ "$hopper" = 0 ]; then
  {
    "$bin/kvtier_hw_model_reference_test"
    timeout 180 "$bin/kvtier_hw_model_gpu_test"
    timeout 120 "$bin/kvtier_hw_forward_gpu_test"
  } >"$OUT/tests.txt" 2>&1
  timeout ${BENCH_TIMEOUT:-400} "$bin/kvtier-model-bench" ${BENCH_ARGS:-} --json "$OUT/bench.json" >"$OUT/bench.txt" 2>&1
  if [ "${SANITIZE:-1}" != 0 ]; then
    timeout ${MEMCHECK_TIMEOUT:-200} "$SANITIZER" --tool memcheck --error-exitcode 3 "$bin/kvtier_hw_model_gpu_test" \
      --gtest_filter='*d128_kv2_ratio4*:*d64_kv1_ratio8*:*Rope*' >"$OUT/sanitizer.txt" 2>&1
    timeout ${RACECHECK_TIMEOUT:-120} "$SANITIZER" --tool racecheck --error-exitcode 3 "$bin/kvtier_hw_model_gpu_test" \
      --gtest_filter='*HopperAttention*ratio16*' >"$OUT/racecheck.txt" 2>&1
  fi
fi

cat "$OUT/device.txt" "$OUT/ptxas.txt"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED|Failure|error|Expected|Which is|wgmma|mma.sync" "$OUT/hopper-tests.txt" | head -30
[ "$hopper" = 0 ] || { echo "Hopper attention tests failed (exit $hopper): the rest skipped"; exit 1; }
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED|Failure|error" "$OUT/tests.txt" | head -30
cat "$OUT/bench.txt"
for log in sanitizer racecheck; do
  [ ! -f "$OUT/$log.txt" ] || grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" "$OUT/$log.txt" | head -5
done
