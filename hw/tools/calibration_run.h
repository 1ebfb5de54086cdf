// From one `kvtier-hw calibrate` run's samples to the Calibration the simulator reads
// (sim/core/calibration.h, whose to_json writes the file; docs/hardware-mode.md has every key).
//
// The `hardware` values are what the hardware file calls them: a link's bandwidth is the rate of its largest
// copy, its latency comes from a latency + bytes / bandwidth fit per direction; the PCIe values from the
// store's offload and reload batches where the run has them, else from plain copies; the efficiencies divide
// by the reference hardware file's peaks. Values whose measurements were skipped stay unset rather than
// guessed. The NVMe values come from the store's own batches where the run has them (a load reads the disk
// through the store, below the raw rate by what its checksums and scheduling cost), else from the raw
// O_DIRECT grid. Raw samples go under `measurements` for anyone who wants to refit them. Timed forward-pass
// steps, when the run has them, give the `serving` step costs (step_fit.h) for the model they ran, and each
// step goes under measurements.steps with its predicted time and residual.
#pragma once

#include <optional>
#include <string>
#include <vector>

// By path: "calibration.h" from this folder names this file.
#include "hw/tools/copy_probe.h"
#include "hw/tools/disk_probe.h"
#include "hw/tools/gemm_probe.h"
#include "hw/tools/step_fit.h"
#include "hw/tools/step_probe.h"
#include "sim/core/calibration.h"
#include "sim/core/hardware.h"

namespace kvtier::hw {

struct KernelRate {
  std::string name;  // as add_kernel_rate reads it: "gather", "scatter", "quantize_turboquant4", ...
  double bytes_per_s = 0;
};

struct CalibrationRun {
  std::string command;
  std::string device;
  HardwareConfig reference;             // the hardware file whose peaks the efficiencies are relative to
  std::vector<CopySample> copies = {};  // h2d and d2h by size, plus one kBoth and one kDeviceToDevice
  std::vector<OffloadSample> offloads = {};  // batches through the store's offload engine, each way
  std::vector<DiskSample> disk = {};
  std::vector<StoreSample> store = {};  // the disk through the NVMe store: what a load from NVMe gets
  std::vector<GemmSample> gemms = {};
  std::vector<KernelRate> kernels = {};
  ModelCard step_model = {};           // the card whose shapes the steps ran
  std::vector<StepSample> steps = {};  // timed forward-pass steps
  int64_t step_block_tokens = 0;       // tokens per KV page they ran with
  StepGap step_gap = {};               // what the GPU did before each timed step
  // Back-to-back prefill chunks from a cool GPU, each one's time (step_probe.h); empty: not measured, and
  // the fit has no power throttle.
  std::vector<double> throttle_seconds = {};
  int64_t throttle_chunk_tokens = 0;
  // attention_throttle_step back to back the same way; empty: not measured, and the throttle slows prefill
  // attention as much as the rest.
  std::vector<double> attention_throttle_seconds = {};
  StepSample attention_throttle_step = kAttentionThrottleStep;
  std::optional<AttentionCosts> attention_tiling = {};  // how the steps' attention cut its launches
};

Calibration summarize_calibration(const CalibrationRun& run);

// The serving fit run again on a calibration's stored step measurements (measurements.steps, .throttle,
// .throttle_attention, .step_gap), for a fit that changed since the GPU was measured: `step_model` is the
// card the steps ran (serving.model must be its name), `reference` the hardware file the efficiencies
// divide by. The attention tiling is the file's own (serving.attention less its costs). Everything else
// is kept; measurements.refit records `command`. Throws std::invalid_argument naming what is missing.
Calibration refit_serving(Calibration calibration, const ModelCard& step_model,
                          const HardwareConfig& reference, const std::string& command);

// The built-in hardware card (configs/hardware) of the GPU a device description names ("NVIDIA H100 80GB
// HBM3 (sm_90, 79.2 GiB)" -> "h100-sxm"), whose peaks that GPU's efficiencies must divide by: an H100's
// copy rate over an H200's HBM bandwidth would price the H100's memory-bound work 1.43x too slow. Throws
// std::invalid_argument naming the device when no built-in card is of its GPU.
std::string reference_card_for(const std::string& device);

}  // namespace kvtier::hw
