#include "scenario.h"

#include <cstdio>

#include "embedded_files.h"

namespace kvtier {
namespace {

Medium medium_of(const ConfigNode& tier, size_t index) {
  std::string name = tier.string("name");
  const std::pair<const char*, Medium> media[] = {
      {"hbm", Medium::kHbm}, {"dram", Medium::kDram}, {"nvme", Medium::kNvme}, {"remote", Medium::kRemote}};
  for (auto [prefix, medium] : media) {
    if (!name.starts_with(prefix)) continue;
    if ((index == 0) != (medium == Medium::kHbm)) break;
    return medium;
  }
  tier.child("name").fail(index == 0 ? "tier 0 holds running requests, so it must be HBM: name it 'hbm'"
                                     : "a lower tier's name starts with its medium: dram, nvme or remote");
}

// Copies every scalar under `overlay` onto `target` at the same key path.
void overlay_keys(ConfigNode& target, const ConfigNode& overlay, const std::string& prefix) {
  for (const std::string& key : overlay.keys()) {
    ConfigNode value = overlay.child(key);
    std::string path = prefix.empty() ? key : prefix + "." + key;
    if (value.is_map()) {
      overlay_keys(target, value, path);
    } else {
      target.set(path, value.as_string());
    }
  }
}

HardwareConfig load_hardware_with(const ConfigNode& root, Scenario& s) {
  ConfigNode hardware = load_config(root.string("hardware"), "configs/hardware");
  if (root.has("calibration")) {
    s.calibration = root.string("calibration");
    ConfigNode calibration = ConfigNode::load_file(s.calibration);
    overlay_keys(hardware, calibration.child("hardware"), "");
    if (auto kernels = calibration.optional_child("kernels")) {
      s.dequantize_bytes_per_s = kernels->number("dequantize_turboquant4_bytes_per_s", 0);
      s.quantize_bytes_per_s = kernels->number("quantize_turboquant4_bytes_per_s", 0);
    }
  }
  return parse_hardware(hardware);
}

void parse_instance(const ConfigNode& node, Scenario& s) {
  node.allow_keys({"gpus", "max_batch_tokens", "max_running", "hbm_utilisation", "activation_reserve",
                   "layerwise_overlap", "load_policy"});
  s.gpus = static_cast<int>(node.integer("gpus", s.hardware.gpu.count));
  if (s.gpus <= 0 || s.gpus > s.hardware.gpu.count) {
    node.child("gpus").fail("expected 1 to " + std::to_string(s.hardware.gpu.count) +
                            " GPUs (the node's count)");
  }
  s.max_batch_tokens = node.integer("max_batch_tokens", s.max_batch_tokens);
  s.max_running = node.integer("max_running", s.max_running);
  if (s.max_batch_tokens <= 0) node.child("max_batch_tokens").fail("expected a positive token budget");
  if (s.max_running <= 0) node.child("max_running").fail("expected a positive number of sequences");
  s.hbm_utilisation = node.number("hbm_utilisation", s.hbm_utilisation);
  if (s.hbm_utilisation <= 0 || s.hbm_utilisation > 1)
    node.child("hbm_utilisation").fail("expected a fraction in (0, 1]");
  s.activation_reserve_bytes = node.quantity("activation_reserve", UnitKind::kBytes, 0);
  s.layerwise_overlap = node.boolean("layerwise_overlap", false);
  std::string policy = node.string("load_policy", "always");
  if (policy != "always" && policy != "breakeven") {
    node.child("load_policy").fail("expected always or breakeven, got '" + policy + "'");
  }
  s.recompute_when_faster = policy == "breakeven";
  double per_gpu = s.hardware.gpu.hbm_capacity * s.hbm_utilisation - s.activation_reserve_bytes;
  s.kv_space_bytes = s.gpus * per_gpu - s.model.weight_bytes();
  if (s.kv_space_bytes <= 0) {
    node.fail(s.model.name + "'s weights (" + format_bytes(s.model.weight_bytes()) +
              ") leave no HBM for KV on " + std::to_string(s.gpus) + " GPUs");
  }
}

// Tier 0's capacity is what the instance leaves for KV; the file must not set it.
void parse_cache(ConfigNode root, Scenario& s) {
  ConfigNode cache = root.child("cache");
  cache.allow_keys({"block_tokens", "tiers"});
  s.block_tokens = cache.integer("block_tokens", s.block_tokens);
  if (s.block_tokens <= 0) cache.child("block_tokens").fail("expected a positive block size in tokens");
  std::vector<ConfigNode> tiers = cache.child("tiers").elements();
  if (tiers.empty()) cache.child("tiers").fail("expected at least the hbm tier");
  for (const char* key : {"capacity", "capacity_tokens", "capacity_blocks"}) {
    if (tiers[0].has(key)) {
      tiers[0].child(key).fail(
          "HBM's cache area is what the weights and activations leave; set "
          "instance.hbm_utilisation or instance.activation_reserve instead");
    }
  }
  for (size_t i = 0; i < tiers.size(); ++i) s.tier_media.push_back(medium_of(tiers[i], i));
  char bytes[64];
  std::snprintf(bytes, sizeof bytes, "%.0fB", s.kv_space_bytes);
  root.set("cache.tiers[0].capacity", bytes);
  s.tiers = parse_tiers(root.child("cache").child("tiers"), s.model, s.block_tokens);
}

void parse_slo(const ConfigNode& root, Scenario& s) {
  if (auto slo = root.optional_child("slo")) {
    slo->allow_keys({"ttft", "tpot"});
    s.slo.ttft_s = slo->quantity("ttft", UnitKind::kDuration, s.slo.ttft_s);
    s.slo.tpot_s = slo->quantity("tpot", UnitKind::kDuration, s.slo.tpot_s);
  }
}

}  // namespace

Scenario parse_scenario(const ConfigNode& original) {
  ConfigNode root = original.clone();
  root.allow_keys({"name", "description", "model", "hardware", "calibration", "instance", "cache", "workload",
                   "slo", "seed", "sample_interval", "variants"});
  Scenario s;
  s.name = root.string("name");
  s.description = root.string("description", "");
  s.model = parse_model_card(load_config(root.string("model"), "models"));
  s.hardware = load_hardware_with(root, s);
  parse_instance(root.has("instance") ? root.child("instance") : ConfigNode::load_string("{}", root.file()),
                 s);
  // Without a calibration, conversions run at 70 % of HBM bandwidth over bytes read plus written.
  double hbm = s.gpus * s.hardware.gpu.hbm_bandwidth * 0.7;
  if (s.dequantize_bytes_per_s <= 0) s.dequantize_bytes_per_s = hbm;
  if (s.quantize_bytes_per_s <= 0) s.quantize_bytes_per_s = hbm;
  parse_cache(root, s);
  parse_slo(root, s);
  int64_t seed = root.integer("seed", 1);
  if (seed < 0) root.child("seed").fail("expected a non-negative seed");
  s.seed = static_cast<uint64_t>(seed);
  s.sample_interval_s = root.quantity("sample_interval", UnitKind::kDuration, 1.0);
  if (s.sample_interval_s <= 0) root.child("sample_interval").fail("expected a positive duration");
  s.workload = root.child("workload");
  return s;
}

std::vector<Variant> parse_variants(const ConfigNode& root) {
  if (!root.has("variants")) return {Variant{"", {}}};
  std::vector<Variant> variants;
  for (const ConfigNode& v : root.child("variants").elements()) {
    v.allow_keys({"name", "set"});
    Variant variant{v.string("name"), {}};
    if (auto set = v.optional_child("set")) {
      for (const std::string& key : set->keys()) variant.overrides.emplace_back(key, set->string(key));
    }
    variants.push_back(std::move(variant));
  }
  return variants;
}

std::pair<std::string, std::string> parse_override(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError("--set '" + text + "': expected key.path=value, such as cache.tiers[1].capacity=2TiB");
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

}  // namespace kvtier
