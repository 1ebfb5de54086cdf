#!/usr/bin/env bash
# Builds kvtier's hardware mode on the GPU machine and produces every file in results/hw/.
# Run from the repository root on the H200 machine: results/hw/run-h200.sh OUTDIR
# Each step logs to OUTDIR/log.txt; a failing step is reported and the rest still run.
set -u -o pipefail
out=${1:?usage: results/hw/run-h200.sh OUTDIR}
mkdir -p "$out"
log="$out/log.txt"
step() {
  echo "=== $*" | tee -a "$log"
  "$@" 2>&1 | tee -a "$log"
  local status=${PIPESTATUS[0]}
  echo "=== exit $status: $1" | tee -a "$log"
  return "$status"
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee -a "$log"
df -hT . /tmp | tee -a "$log"
step cmake -B build-gpu -DKVTIER_SIM=OFF -DKVTIER_GPU=cuda -DKVTIER_WERROR=ON -DCMAKE_BUILD_TYPE=Release
targets="kvtier-hw kvtier_hw_store_test kvtier_hw_probe_test kvtier_hw_offload_test kvtier_hw_store_bench
  kvtier_hw_tiered_test kvtier_hw_tiered_gpu_test"
if ! step cmake --build build-gpu -j16 --target $targets; then
  # GPUDirect Storage is optional: without it the store still runs through pinned DRAM.
  step cmake -B build-gpu -DKVTIER_GDS=OFF && step cmake --build build-gpu -j16 --target $targets
fi
step build-gpu/hw/store/kvtier_hw_store_test
step build-gpu/hw/tools/kvtier_hw_probe_test
step build-gpu/hw/store/kvtier_hw_offload_test
step compute-sanitizer --tool memcheck --error-exitcode 9 build-gpu/hw/store/kvtier_hw_offload_test
step compute-sanitizer --tool racecheck --error-exitcode 9 build-gpu/hw/store/kvtier_hw_offload_test
step build-gpu/hw/store/kvtier_hw_tiered_test
step build-gpu/hw/store/kvtier_hw_tiered_gpu_test
step compute-sanitizer --tool memcheck --error-exitcode 9 build-gpu/hw/store/kvtier_hw_tiered_gpu_test
step compute-sanitizer --tool racecheck --error-exitcode 9 build-gpu/hw/store/kvtier_hw_tiered_gpu_test
disk_dir=$PWD  # the machine's disk; /tmp may be memory-backed
step build-gpu/hw/tools/kvtier-hw roundtrip --dir "$disk_dir" --out "$out/roundtrip-h200.json"
step build-gpu/hw/tools/kvtier-hw bench --dir "$disk_dir" --out "$out/bench-h200.json"
step build-gpu/hw/tools/kvtier-hw calibrate --dir "$disk_dir" --out "$out/calibration-h200.json"
step build-gpu/hw/tools/kvtier-hw replay --model llama-3.1-8b --tiers replay-int4 --block-tokens 256 \
  --requests 60 --verify --dir "$disk_dir" --out "$out/replay-h200.json"
export KVTIER_BENCH_DIR=$disk_dir
step build-gpu/hw/store/kvtier_hw_store_bench --benchmark_min_time=0.5s \
  --benchmark_out="$out/nvme-store-bench-h200.json" --benchmark_out_format=json
