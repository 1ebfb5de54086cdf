#!/usr/bin/env bash
# The GPU half of kvtier's validation set: calibrate from microbenchmarks, then serve each validation
# scenario for real. Run from the repository root on the H200 machine:
#   validate/run-h200.sh OUTDIR [SCENARIO...] [breakeven] [no-throttle]
# (default: every validate/scenarios/h200-*.yaml, then case (e), the break-even sweep: about 5 minutes for
# Llama-3.1-8B, bf16 then int4, DRAM and NVMe; named scenarios run alone unless `breakeven` is named too;
# `no-throttle` adds a second calibration without the power throttle, for compare-h200.sh's side tables).
# The GPU's clock is logged every 250 ms to OUTDIR/clocks.csv while it runs (docs/validation.md says why).
# KVTIER_HW names the kvtier-hw binary (default: build-gpu/hw/tools/kvtier-hw, built here if missing).
# The calibration never sees a serving run: it times copies, the disk and isolated forward-pass steps.
# The CPU half, validate/compare-h200.sh, simulates each scenario with that calibration and compares.
set -u -o pipefail
out=${1:?usage: validate/run-h200.sh OUTDIR [SCENARIO...] [breakeven] [no-throttle]}
shift
. "$(dirname "$0")/h200-selection.sh"
hw=${KVTIER_HW:-build-gpu/hw/tools/kvtier-hw}
if [ ! -x "$hw" ]; then
  cmake -B build-gpu -DKVTIER_SIM=OFF -DKVTIER_GPU=cuda -DKVTIER_TESTS=OFF -DKVTIER_BENCHMARKS=OFF \
    -DCMAKE_BUILD_TYPE=Release && cmake --build build-gpu -j"$(nproc)" --target kvtier-hw || exit 1
fi
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/device.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu \
  --format=csv,noheader -lms 250 > "$out/clocks.csv" &
clock_log=$!
trap 'kill $clock_log' EXIT
# The attention throttle run on a serving step's shape: 8K new tokens after 32K cached beside 38 decodes of
# 15K, near the median of (d)'s long-context steps (docs/validation.md, "The attention run on a serving
# step's shape, on the H200").
if [ ! -f "$out/calibration.json" ]; then
  "$hw" calibrate --steps --step-model llama-3.1-8b --throttle-attention-step 8192:32768:38:15360 \
    --dir "$PWD" --out "$out/calibration.json" \
    > "$out/calibration.log" 2>&1 || { cat "$out/calibration.log"; exit 1; }
fi
# The same without the power throttle (docs/validation.md compares the two).
if [ "$no_throttle" = 1 ] && [ ! -f "$out/calibration-no-throttle.json" ]; then
  "$hw" calibrate --steps --no-throttle --step-model llama-3.1-8b --dir "$PWD" \
    --out "$out/calibration-no-throttle.json" > "$out/calibration-no-throttle.log" 2>&1 ||
    { cat "$out/calibration-no-throttle.log"; exit 1; }
fi
status=0
for scenario in "${scenarios[@]}"; do
  name=$(basename "$scenario" .yaml)
  name=${name#h200-}
  "$hw" serve "$scenario" --nvme-dir "$PWD" --out "$out/$name" --force 2>&1 | tee "$out/$name.log" || status=1
done
# (e): loading a cached prefix from DRAM and from NVMe against recomputing it, 1K to 64K tokens.
if [ "$breakeven" = 1 ]; then
  for kv in bf16 int4; do
    "$hw" breakeven --model llama-3.1-8b --kv "$kv" --paths dram,nvme --sweep 1K:64K:1.25 --new-tokens 1024 \
      --repeats 2 --nvme-dir "$PWD" --out "$out/e-breakeven-$kv.json" 2>&1 | tee "$out/e-breakeven-$kv.log" || status=1
  done
fi
exit $status
