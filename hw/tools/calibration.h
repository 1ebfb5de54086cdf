// The calibration JSON that `kvtier-hw calibrate` writes and the simulator overlays on a hardware file.
//
// Layout (docs/hardware-mode.md has every key):
//   {"tool", "command", "device",
//    "hardware": {"gpu": {prefill_mfu, memory_bandwidth_efficiency},
//                 "pcie": {h2d_bandwidth, d2h_bandwidth, latency},
//                 "nvme": {read_bandwidth, write_bandwidth, latency}},   <- hardware-file schema, unit
//                 strings
//    "kernels": {"<kernel>_bytes_per_s": number, ...},
//    "measurements": {"copy": [...], "disk": [...], "gemm": [...]}}
// The `hardware` object holds only what was measured, in the units and key names of
// configs/hardware/*.yaml, so overlaying it is a plain merge. Raw samples stay under `measurements` for
// anyone who wants to refit them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "copy_probe.h"
#include "disk_probe.h"
#include "gemm_probe.h"
#include "hardware.h"

namespace kvtier::hw {

struct KernelRate {
  std::string name;  // "gather", "scatter", "quantize_turboquant4", ...
  double bytes_per_s = 0;
};

struct CalibrationRun {
  std::string command;
  std::string device;
  HardwareConfig reference;             // the hardware file whose peaks the efficiencies are relative to
  std::vector<CopySample> copies = {};  // h2d and d2h by size, plus one kBoth and one kDeviceToDevice
  std::vector<DiskSample> disk = {};
  std::vector<GemmSample> gemms = {};
  std::vector<KernelRate> kernels = {};
};

// Builds the JSON; sections without samples are left out of `hardware` rather than guessed.
nlohmann::json calibration_json(const CalibrationRun& run);

// "54.93GB/s", "2.71us": compact unit strings that kvtier's unit parser reads back.
std::string bandwidth_string(double bytes_per_s);
std::string duration_string(double seconds);

}  // namespace kvtier::hw
