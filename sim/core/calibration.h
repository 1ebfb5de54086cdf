// A machine's calibration: what `kvtier-hw calibrate` measured, as typed values the simulator applies.
//
// The file is JSON (docs/hardware-mode.md lists every key). `hardware` holds measured values of the
// hardware file's keys, in its units ("55.30GB/s", "2.59us"); `kernels` holds GPU rates, among them the
// quantize and dequantize rate of each KV encoding the run measured; `serving` holds the cost model's step
// terms fitted to timed forward-pass steps of one model (with `serving.attention`, the tiling and block
// costs that price attention instead of the formula's attention terms, which then become optional);
// `measurements` keeps the raw samples for refits.
// to_json / from_json below are the only code that knows the file's keys: the hardware tool writes through
// them and the simulator reads through them. Kernel rates are keyed by Encoding value, so a tier stored as
// int4 is never charged the TurboQuant rate: an encoding the run did not measure has no rate, and the caller
// falls back to its own estimate.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/config.h"
#include "sim/core/cost_model.h"
#include "sim/core/hardware.h"
#include "sim/core/kv_layout.h"
#include "sim/core/model_card.h"

namespace kvtier {

// Measured values of hardware-file keys; unset where the run skipped that measurement.
struct MeasuredHardware {
  std::optional<double> prefill_mfu;                  // gpu.prefill_mfu: fraction of bf16_dense
  std::optional<double> memory_bandwidth_efficiency;  // gpu.memory_bandwidth_efficiency: of hbm_bandwidth
  std::optional<double> pcie_h2d_bandwidth;           // bytes/s
  std::optional<double> pcie_d2h_bandwidth;           // bytes/s
  std::optional<double> pcie_h2d_latency;             // seconds
  std::optional<double> pcie_d2h_latency;             // seconds
  std::optional<double> nvme_read_bandwidth;          // bytes/s per drive
  std::optional<double> nvme_write_bandwidth;         // bytes/s per drive
  std::optional<double> nvme_latency;                 // seconds
  // The NVMe store's CPU per GB moved (its checksums, all threads), seconds: nvme.store_*_cpu_per_gb.
  std::optional<double> nvme_store_read_cpu_per_gb;
  std::optional<double> nvme_store_write_cpu_per_gb;
};

enum class Conversion { kQuantize, kDequantize };  // bf16 to the encoding, the encoding to bf16

// A conversion kernel's rate, in bf16 bytes (the uncompressed side) per second on one GPU.
struct ConversionRate {
  Encoding encoding;
  Conversion conversion = Conversion::kQuantize;
  double bytes_per_s = 0;
};

struct KernelRates {
  std::optional<double> gather_bytes_per_s;  // page bytes moved (one side) per second
  std::optional<double> scatter_bytes_per_s;
  std::vector<ConversionRate> conversions;
};

// The serving terms of the cost model, fitted to timed forward-pass steps of one model (its card's name):
// they price steps of that model only, since the fractions are relative to its FLOP and byte counts.
struct ServingCalibration {
  std::string model;
  StepCosts costs;
};

struct Calibration {
  std::string tool;                // "kvtier-hw calibrate"
  std::string command;             // the command line that measured it
  std::string device;              // "NVIDIA H200 (sm_90, 139.8 GiB)"
  std::string reference_hardware;  // the hardware file whose peaks the efficiencies divide by
  MeasuredHardware hardware = {};
  KernelRates kernels = {};
  std::optional<ServingCalibration> serving = {};
  // {"copy": [...], "disk": [...], "gemm": [...], "steps": [...]}
  nlohmann::json measurements = nlohmann::json::object();
};

// The file's format. Hardware values are written with 3-4 significant digits (bandwidths in GB/s with two
// decimals, latencies in us with two), so a value survives a round trip only once rounded.
// from_json throws CalibrationKeyError; an encoding without a kernel name (see below) makes to_json throw
// std::invalid_argument.
void to_json(nlohmann::json& json, const Calibration& calibration);
void from_json(const nlohmann::json& json, Calibration& calibration);

// Records a kernel's rate under its name in the file without "_bytes_per_s": gather, scatter,
// quantize_<encoding> or dequantize_<encoding> (encoding as kernel_encoding_name writes it). Throws
// CalibrationKeyError for any other name.
void add_kernel_rate(KernelRates& kernels, const std::string& kernel, double bytes_per_s);

// A ConfigError about one key of the file: "key.path: what was expected". load_calibration turns it into
// "file:line:column: key.path: what was expected".
class CalibrationKeyError : public ConfigError {
 public:
  CalibrationKeyError(std::vector<std::string> keys, const std::string& detail);
  const std::vector<std::string>& keys() const {
    return keys_;
  }  // to the offending value, or the missing key
  const std::string& detail() const { return detail_; }

 private:
  std::vector<std::string> keys_;
  std::string detail_;
};

// Throws ConfigError located in the file for unreadable files, invalid JSON and bad keys.
Calibration load_calibration(const std::string& path);
// `name` stands for the file in error messages.
Calibration parse_calibration(const std::string& text, const std::string& name);

// A kernel's name for an encoding in the file ("turboquant4", "int4_g32", "fp8"), or nullopt for bf16 and
// for formats no kernel implements (int4 with fp32 or bf16 scales or without a zero point, TurboQuant
// slots not 8-byte aligned).
std::optional<std::string> kernel_encoding_name(const Encoding& encoding);

// The two encodings store K/V identically: the same kind, and for int4 the same group size, scale width
// and zero point; for TurboQuant the same slot alignment. Fields the kind does not use are ignored.
bool same_format(const Encoding& a, const Encoding& b);

// Lays every measured value over `hardware` (the hardware file's): a measured latency replaces both the
// file's shared latency and a direction's own.
void overlay_calibration(const Calibration& calibration, HardwareConfig& hardware);

// The serving step costs for `model` (matched by card name), or nullopt when the calibration has none for
// it: the caller then prices steps with the default formula.
std::optional<StepCosts> serving_step_costs(const Calibration& calibration, const ModelCard& model);

// The measured rate of converting bf16 to `encoding` (kQuantize) or back, in bf16 bytes per second on one
// GPU; nullopt where the run did not measure that encoding.
std::optional<double> conversion_rate(const Calibration& calibration, Conversion conversion,
                                      const Encoding& encoding);

// The GPU's rate converting KV from layout `from` to layout `to` (layer by layer: dequantize what `from`
// encodes, quantize what `to` encodes), as bytes read plus written per second on one GPU: the bytes of
// both layouts over the kernels' time, the form in which the simulator charges conversions. Infinite when
// every layer already matches; nullopt when a layer needs a kernel the calibration did not measure.
std::optional<double> layout_conversion_bytes_per_s(const Calibration& calibration, const ModelCard& model,
                                                    const KvLayout& from, const KvLayout& to);

// The rate the simulator charges a conversion from `from` to `to` at on `gpus` GPUs, in bytes read plus
// written per second: the calibration's kernels (layout_conversion_bytes_per_s) on each GPU where it
// measured every encoding involved, otherwise 70 % of the GPUs' HBM bandwidth (`hbm_bandwidth` per GPU).
double charged_conversion_bytes_per_s(const std::optional<Calibration>& calibration, const ModelCard& model,
                                      const KvLayout& from, const KvLayout& to, double hbm_bandwidth,
                                      int gpus);

// What the simulator charges a lower tier's conversions at, in bytes read plus written per second on the
// instance: loads convert the tier's layout to HBM's, stores convert back.
struct ConversionRates {
  double load_bytes_per_s = 0;
  double store_bytes_per_s = 0;
};

}  // namespace kvtier
