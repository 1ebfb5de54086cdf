// A scenario: everything one serving simulation needs, read from a YAML file (configs/scenarios/).
//
// It names the model card, the hardware file (optionally overlaid with a `kvtier-hw calibrate` JSON),
// the instance (GPUs, batching limits, HBM reserved for activations), the cache tiers (tier 0 is HBM,
// sized from what the weights and activations leave), the workload, the SLOs and the seed. `variants`
// lists named sets of overrides (the same `key.path=value` form as --set) to run side by side; a file
// without variants is one run. docs/scenarios.md describes every key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config.h"
#include "hardware.h"
#include "metrics.h"
#include "model_card.h"
#include "platform.h"
#include "tier_spec.h"

namespace kvtier {

struct Scenario {
  std::string name;
  std::string description;
  ModelCard model;
  HardwareConfig hardware;
  std::string calibration;  // the calibration file overlaid on the hardware, if any
  int gpus = 1;
  int64_t max_batch_tokens = 8192;
  int64_t max_running = 256;
  double hbm_utilisation = 0.9;
  double activation_reserve_bytes = 0;  // per GPU
  bool layerwise_overlap = false;
  bool recompute_when_faster = false;  // instance.load_policy: breakeven
  double kv_space_bytes = 0;  // derived: HBM for KV across the instance's GPUs
  double dequantize_bytes_per_s = 0;
  double quantize_bytes_per_s = 0;
  int64_t block_tokens = 256;
  std::vector<TierSpec> tiers;
  std::vector<Medium> tier_media;
  Slo slo;
  uint64_t seed = 1;
  double sample_interval_s = 1;
  std::optional<ConfigNode> workload;  // read by the workload builder (workload.h)
};

struct Variant {
  std::string name;
  std::vector<std::pair<std::string, std::string>> overrides;  // key path, YAML value
};

// Reads a scenario after overrides have been applied. Throws ConfigError before anything runs.
Scenario parse_scenario(const ConfigNode& root);
// The variants of a scenario file, or one unnamed variant when it lists none.
std::vector<Variant> parse_variants(const ConfigNode& root);
// Splits "key.path=value" (the --set form).
std::pair<std::string, std::string> parse_override(const std::string& text);

}  // namespace kvtier
