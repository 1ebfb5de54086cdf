#!/usr/bin/env bash
# Nsight Compute profile of kernels in the kernel benchmark: for each Google Benchmark filter in
# BENCHMARKS (default the 4-bit kernels), the first launch of its kernel, with the sections that say
# whether a kernel is bound by memory, by instruction issue or by latency. Clocks are left alone
# (--clock-control none), as on a serving machine. Writes $OUT/ncu-<n>.txt and prints a digest.
#   OUT=/tmp/out hw/kernels/profile_kernels.sh          # after run_gpu_checks.sh built $BUILD
set -uo pipefail
OUT=${OUT:-gpu-profile}
BUILD=${BUILD:-build-gpu}
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
read -r -a benchmarks <<<"${BENCHMARKS:-BM_TurboQuantQuantize BM_TurboQuantDequantize BM_Int4Quantize/32 BM_Int4Dequantize/32}"
sections=(SpeedOfLight LaunchStats Occupancy SchedulerStats WarpStateStats MemoryWorkloadAnalysis MemoryWorkloadAnalysis_Tables ComputeWorkloadAnalysis InstructionStats)
mkdir -p "$OUT"
for i in "${!benchmarks[@]}"; do
  log="$OUT/ncu-$i.txt"
  "$NCU" --clock-control none --print-details all --kernel-name regex:quantize --launch-count 1 "${sections[@]/#/--section=}" \
    "$BUILD/hw/kernels/kvtier_hw_kernels_bench" --benchmark_filter="^${benchmarks[$i]}/" >"$log" 2>&1
  echo "== ${benchmarks[$i]} (ncu exit $?)"
  grep -E "quantize_kernel|Duration|DRAM Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Achieved Occupancy|Registers Per|No Eligible|Warp Cycles Per Issued|Stall|L1/TEX Hit|Mem Busy|Max Bandwidth" "$log" | cut -c1-150
done
