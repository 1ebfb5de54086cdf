#!/usr/bin/env bash
# Builds the model targets for CUDA, runs the CPU and GPU tests (compute-sanitizer memcheck on a subset),
# prints the attention kernel's resource use, and runs kvtier-model-bench. Writes logs and bench.json to
# $OUT (default ./model-checks) and prints a short summary last. From the source root, on an NVIDIA GPU:
#   OUT=/tmp/out hw/model/run_model_checks.sh
# BENCH_ARGS (default: all lengths) are passed to kvtier-model-bench; SANITIZE=0 skips memcheck.
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
"$NVCC" -arch=sm_90 -std=c++20 -O3 -DKVTIER_GPU_CUDA=1 -Ihw/model -Ihw/kernels -Ihw -Xptxas -v -c hw/model/attention.cu \
  -o /dev/null >"$OUT/ptxas.txt" 2>&1
{
  "$bin/kvtier_hw_model_reference_test"
  timeout 180 "$bin/kvtier_hw_model_gpu_test"
  timeout 120 "$bin/kvtier_hw_forward_gpu_test"
} >"$OUT/tests.txt" 2>&1
[ "${SANITIZE:-1}" = 0 ] || timeout 180 "$SANITIZER" --tool memcheck --error-exitcode 3 "$bin/kvtier_hw_model_gpu_test" \
  --gtest_filter='*d128_kv2_ratio4*:*d64_kv1_ratio8*:*Rope*' >"$OUT/sanitizer.txt" 2>&1
timeout ${BENCH_TIMEOUT:-400} "$bin/kvtier-model-bench" ${BENCH_ARGS:-} --json "$OUT/bench.json" >"$OUT/bench.txt" 2>&1

cat "$OUT/device.txt"
grep -E "registers|spill" "$OUT/ptxas.txt" | head -8
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED|Failure|error" "$OUT/tests.txt" | head -30
[ ! -f "$OUT/sanitizer.txt" ] || grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/sanitizer.txt"
cat "$OUT/bench.txt"
