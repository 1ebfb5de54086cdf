#!/usr/bin/env bash
# Builds the kernel targets for CUDA, runs the CPU and GPU tests, compute-sanitizer (memcheck, racecheck)
# on the GPU tests, and the kernel benchmark. Writes logs to $OUT (default ./gpu-checks) and prints a
# short summary last. Run from the source root on a machine with an NVIDIA GPU:
#   OUT=/tmp/out hw/kernels/run_gpu_checks.sh
# BENCH_FILTER (a Google Benchmark regex, default all) narrows the benchmark; SANITIZE=0 skips
# compute-sanitizer (minutes) while iterating on speed.
set -uo pipefail
OUT=${OUT:-gpu-checks}
mkdir -p "$OUT"
BUILD=${BUILD:-build-gpu}
SANITIZER=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)

cmake -B "$BUILD" -DKVTIER_SIM=OFF -DKVTIER_GPU=cuda -DKVTIER_WERROR=${KVTIER_WERROR:-ON} >"$OUT/cmake.log" 2>&1 &&
  cmake --build "$BUILD" -j16 --target kvtier_hw_kernels_test kvtier_hw_kernels_gpu_test kvtier_hw_kernels_bench \
    >"$OUT/build.log" 2>&1 || { tail -n 30 "$OUT/cmake.log" "$OUT/build.log"; exit 1; }
bin=$BUILD/hw/kernels
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >"$OUT/device.txt" 2>&1
"$bin/kvtier_hw_kernels_test" >"$OUT/cpu_tests.txt" 2>&1
"$bin/kvtier_hw_kernels_gpu_test" >"$OUT/gpu_tests.txt" 2>&1
[ "${SANITIZE:-1}" = 0 ] || {
  "$SANITIZER" --tool memcheck --error-exitcode 3 "$bin/kvtier_hw_kernels_gpu_test"
  echo "memcheck exit $?"
  "$SANITIZER" --tool racecheck --error-exitcode 3 "$bin/kvtier_hw_kernels_gpu_test"
  echo "racecheck exit $?"
} >"$OUT/sanitizer.txt" 2>&1
"$bin/kvtier_hw_kernels_bench" --benchmark_filter="${BENCH_FILTER:-.}" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_out="$OUT/bench.json" --benchmark_out_format=json >"$OUT/bench.txt" 2>&1

cat "$OUT/device.txt"
tail -1 "$OUT/cpu_tests.txt"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED" "$OUT/gpu_tests.txt"
[ ! -f "$OUT/sanitizer.txt" ] || grep -E "ERROR SUMMARY|RACECHECK SUMMARY|exit" "$OUT/sanitizer.txt"
grep -E "median|^BM_" "$OUT/bench.txt" | grep -v -E "_mean|_stddev|_cv"
