#include "sim/engine/scenario.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sim/core/config_files.h"
#include "sim/engine/workload.h"

namespace kvtier {
namespace {

constexpr int64_t kMaxBlockTokens = int64_t{1} << 20;

// The scenario's calibration file, if it names one.
std::optional<Calibration> load_scenario_calibration(const ConfigNode& root, Scenario& s) {
  if (!root.has("calibration")) return std::nullopt;
  s.calibration = root.string("calibration");
  return load_calibration(s.calibration);
}

// The hardware file (or the hardware given inline) with what the calibration measured laid over it.
HardwareConfig load_hardware_with(const ConfigNode& root, const std::optional<Calibration>& calibration) {
  ConfigNode node = root.child("hardware");
  HardwareConfig hardware =
      parse_hardware(node.is_map() ? node : load_config(node.as_string(), "configs/hardware"));
  if (calibration) overlay_calibration(*calibration, hardware);
  return hardware;
}

// The calibration's efficiencies are fractions of its reference card's peaks; laid over another card's they
// stand for other rates (an H100 calibrated against the H200's HBM bandwidth reads 1.43x too slowly on the
// H100's card). A what-if may want that, a validation does not: say so.
void warn_of_another_reference(const Calibration& calibration, Scenario& s) {
  if (calibration.reference_hardware.empty() || calibration.reference_hardware == s.hardware.name) return;
  s.warnings.push_back("calibration " + s.calibration + ": its efficiencies are fractions of the peaks of '" +
                       calibration.reference_hardware + "', laid over those of '" + s.hardware.name +
                       "' (the scenario's hardware); they give the measured rates only on the GPU they were "
                       "measured against");
}

// Each tier's conversions to and from HBM's layout on the instance (charged_conversion_bytes_per_s).
// The GPUs' rates converting a tier's layout to HBM's (load) and back (store).
ConversionRates conversion_rates(const Scenario& s, const std::optional<Calibration>& calibration,
                                 const KvLayout& layout) {
  auto rate = [&](const KvLayout& from, const KvLayout& to) {
    return charged_conversion_bytes_per_s(calibration, s.model, from, to, s.hardware.gpu.hbm_bandwidth,
                                          s.gpus);
  };
  return {rate(layout, s.tiers[0].layout), rate(s.tiers[0].layout, layout)};
}

std::vector<ConversionRates> tier_conversion_rates(const Scenario& s,
                                                   const std::optional<Calibration>& calibration) {
  std::vector<ConversionRates> rates;
  for (const TierSpec& tier : s.tiers) rates.push_back(conversion_rates(s, calibration, tier.layout));
  return rates;
}

int64_t positive_integer(const std::optional<ConfigNode>& node, int64_t fallback, const char* what) {
  if (!node) return fallback;
  int64_t value = node->as_integer();
  if (value <= 0) node->fail(std::string("expected a positive ") + what);
  return value;
}

// Where a node is, without its key path: "s.yaml:4:12", or the --set that gave it.
std::string location_of(const ConfigNode& node) {
  std::string where = node.where();
  const std::string suffix = ": " + node.path();
  if (where.ends_with(suffix)) where.erase(where.size() - suffix.size());
  return where;
}

[[noreturn]] void fail_same_setting(const ConfigNode& given, const ConfigNode& other) {
  given.fail("the same setting as " + other.path() + " (" + location_of(other) + "); give one of them");
}

// vLLM's engine arguments that name a setting of the instance, as its Python EngineArgs spells them and
// with dashes, as its command line does (--gpu-memory-utilization).
std::string dashed(std::string_view vllm_name) {
  std::string name(vllm_name);
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

// The instance's value of one setting under kvtier's name (none for a setting kept elsewhere) or vLLM's
// (either spelling); giving it twice is an error naming both.
std::optional<ConfigNode> instance_setting(const ConfigNode& instance, std::string_view kvtier_name,
                                           std::string_view vllm_name) {
  std::optional<ConfigNode> found;
  for (const std::string& key : {std::string(kvtier_name), std::string(vllm_name), dashed(vllm_name)}) {
    if (key.empty() || !instance.has(key)) continue;
    ConfigNode node = instance.child(key);
    if (found) fail_same_setting(node, *found);
    found = node;
  }
  return found;
}

constexpr std::array<std::string_view, 6> kVllmInstanceNames = {
    "tensor_parallel_size", "max_num_batched_tokens", "max_num_seqs", "gpu_memory_utilization",
    "block_size",           "kv_cache_dtype",
};

std::vector<std::string> instance_keys() {
  std::vector<std::string> keys = {"gpus", "max_batch_tokens", "max_running", "hbm_utilisation"};
  for (const char* key : {"activation_reserve", "layerwise_overlap", "load_policy", "transfers"}) {
    keys.emplace_back(key);
  }
  for (std::string_view name : kVllmInstanceNames) {
    keys.emplace_back(name);
    keys.push_back(dashed(name));
  }
  return keys;
}

// vLLM's kv_cache_dtype as the KV preset of the GPU cache (tier 0): auto is the model's 16-bit dtype (vLLM
// keeps the KV in bf16 or fp16, even for fp32 or fp8 weights), which takes bf16's two bytes, as float16 does.
std::string kv_preset_of(const ConfigNode& kv_cache_dtype) {
  const std::string value = kv_cache_dtype.as_string();
  const std::vector<std::string> accepted = {"auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2"};
  if (std::find(accepted.begin(), accepted.end(), value) == accepted.end()) {
    kv_cache_dtype.fail(
        "expected a kv_cache_dtype kvtier has a layout for: auto, bfloat16 or float16 (bf16), fp8, "
        "fp8_e4m3 or fp8_e5m2 (fp8); got '" +
        value + "' (fp8_inc, fp8_ds_mla and int8 have none)");
  }
  kv_cache_dtype.as_choice(accepted);  // passes by now; tells the schema (config_schema.h) the values
  return value == "auto" || value == "bfloat16" || value == "float16" ? "bf16" : "fp8";
}

// The instance's settings that vLLM's names put elsewhere in kvtier: block_size is cache.block_tokens,
// kv_cache_dtype tier 0's kv.
struct VllmCacheKeys {
  std::optional<ConfigNode> block_size;
  std::optional<ConfigNode> kv_cache_dtype;
};

// `instance` may be absent: its keys default, and an error about the whole instance names the root.
VllmCacheKeys parse_instance(const std::optional<ConfigNode>& instance, const ConfigNode& root, Scenario& s) {
  const ConfigNode& node = instance ? *instance : root;
  VllmCacheKeys vllm;
  if (instance) {
    node.allow_keys(instance_keys());
    s.gpus = s.hardware.gpu.count;
    if (std::optional<ConfigNode> gpus = instance_setting(node, "gpus", "tensor_parallel_size")) {
      const int64_t count = gpus->as_integer();
      if (count <= 0 || count > s.hardware.gpu.count) {
        gpus->fail("expected 1 to " + std::to_string(s.hardware.gpu.count) + " GPUs (the node's count)");
      }
      s.gpus = static_cast<int>(count);
    }
    if (std::optional<ConfigNode> budget =
            instance_setting(node, "max_batch_tokens", "max_num_batched_tokens")) {
      s.max_batch_tokens = budget->as_token_count();
      if (s.max_batch_tokens <= 0) budget->fail("expected a positive token budget");
    }
    s.max_running = positive_integer(instance_setting(node, "max_running", "max_num_seqs"), s.max_running,
                                     "number of sequences");
    if (std::optional<ConfigNode> share =
            instance_setting(node, "hbm_utilisation", "gpu_memory_utilization")) {
      s.hbm_utilisation = share->as_number();
      if (s.hbm_utilisation <= 0 || s.hbm_utilisation > 1) share->fail("expected a fraction in (0, 1]");
    }
    vllm.block_size = instance_setting(node, "", "block_size");
    vllm.kv_cache_dtype = instance_setting(node, "", "kv_cache_dtype");
    s.activation_reserve_bytes = node.quantity("activation_reserve", UnitKind::kBytes, 0);
    s.layerwise_overlap = node.boolean("layerwise_overlap", false);
    s.recompute_when_faster = node.choice("load_policy", {"always", "breakeven"}, "always") == "breakeven";
    s.blocking_transfers = node.choice("transfers", {"background", "blocking"}, "background") == "blocking";
  } else {
    s.gpus = s.hardware.gpu.count;
  }
  double per_gpu = s.hardware.gpu.hbm_capacity * s.hbm_utilisation - s.activation_reserve_bytes;
  s.kv_space_bytes = s.gpus * per_gpu - s.model.weight_bytes();
  if (s.kv_space_bytes <= 0) {
    node.fail(s.model.name + "'s weights (" + format_bytes(s.model.weight_bytes()) +
              ") leave no HBM for KV on " + std::to_string(s.gpus) + " GPUs");
  }
  return vllm;
}

// The key a tier's capacity was given by, for errors about it.
ConfigNode capacity_key(const ConfigNode& tier) {
  for (const char* key : {"capacity", "capacity_tokens", "capacity_blocks"}) {
    if (tier.has(key)) return tier.child(key);
  }
  return tier;
}

// What does not fit in the node is an error at `key`, or with allow_oversubscribe a warning.
void oversubscribed(const ConfigNode& key, const std::string& message, bool allow_oversubscribe,
                    Scenario& s) {
  if (!allow_oversubscribe) {
    key.fail(message +
             "; make it smaller, or set allow_oversubscribe: true (--allow-oversubscribe) to simulate "
             "it anyway");
  }
  s.warnings.push_back(key.where() + ": " + message + " (allow_oversubscribe: simulated anyway)");
}

// A DRAM tier must fit in the node's DRAM and an NVMe tier on its drives, as the hardware file gives them;
// with allow_oversubscribe, one that does not is a warning.
void check_tiers_fit_the_node(const std::vector<ConfigNode>& nodes, bool allow_oversubscribe, Scenario& s) {
  const HardwareConfig& hw = s.hardware;
  // A cluster's replicas on one node each have their own tiers, side by side.
  const int sharing = s.cluster ? s.cluster->instances_on_a_node() : 1;
  for (size_t i = 1; i < s.tiers.size(); ++i) {
    const TierSpec& tier = s.tiers[i];
    double limit = 0;
    std::string what;
    if (tier.medium == Medium::kDram) {
      limit = hw.dram_capacity;
      what = "the node's DRAM";
    } else if (tier.medium == Medium::kNvme) {
      limit = hw.nvme.drives * hw.nvme.capacity;
      what =
          "the node's NVMe (" + std::to_string(hw.nvme.drives) + " x " + format_bytes(hw.nvme.capacity) + ")";
    } else {
      continue;
    }
    const double needed = static_cast<double>(tier.capacity_bytes) * sharing;
    if (needed <= limit) continue;
    const std::string tiers = sharing == 1
                                  ? "a " + format_bytes(needed) + " tier does"
                                  : std::to_string(sharing) + " instances' tiers of " +
                                        format_bytes(static_cast<double>(tier.capacity_bytes)) + " do";
    oversubscribed(capacity_key(nodes[i]),
                   tiers + " not fit in " + what + ", " + format_bytes(limit) + " in " + hw.name,
                   allow_oversubscribe, s);
  }
}

// The pool's share of each node's DRAM, beside the DRAM tiers of the node's replicas, must fit in it.
void check_pool_fits(const ConfigNode& pool, const ClusterSpec& c, bool allow_oversubscribe, Scenario& s) {
  const double share = static_cast<double>(c.pool->capacity_bytes) / c.pool_holders();
  const bool on_dram = c.pool_medium == Medium::kDram;
  const std::string medium = on_dram ? "DRAM" : "NVMe";
  double used = share;
  if (c.pool_nodes == 0) {  // beside the serving nodes' replicas' own tiers
    for (const TierSpec& tier : s.tiers) {
      if (tier.medium == c.pool_medium)
        used += static_cast<double>(tier.capacity_bytes) * c.instances_on_a_node();
    }
  }
  const HardwareConfig& hw = s.hardware;
  const double room = on_dram ? hw.dram_capacity : hw.nvme.drives * hw.nvme.capacity;
  if (used <= room) return;
  oversubscribed(pool.has("capacity") ? pool.child("capacity") : pool,
                 "the pool's share of each node (" + format_bytes(share) + ")" +
                     (c.pool_nodes == 0 ? ", with the node's replicas' " + medium + " tiers," : "") +
                     " needs " + format_bytes(used) + " of " + medium + ", more than the " +
                     format_bytes(room) + " of " + hw.name,
                 allow_oversubscribe, s);
}

// `cluster.pool.nodes` and `.medium`: which nodes hold the pool, and in what.
void parse_pool_placement(const ConfigNode& pool, ClusterSpec& c, const HardwareConfig& hw) {
  const int64_t nodes = pool.integer("nodes", 0);
  if (nodes < 0 || nodes > kMaxClusterInstances)
    pool.child("nodes").fail("expected 0 (the serving nodes) to " + std::to_string(kMaxClusterInstances) +
                             " pool nodes");
  c.pool_nodes = static_cast<int>(nodes);
  if (pool.choice("medium", {"dram", "nvme"}, "dram") == "dram") return;
  if (hw.nvme.drives == 0)
    pool.child("medium").fail("the hardware file '" + hw.name + "' has no NVMe drives");
  c.pool_medium = Medium::kNvme;
}

// A hit comes from every node holding the pool at once, over the replica's NIC and its GPUs' PCIe (and
// from NVMe, over the holders' drives).
LoadPath pool_load_path(const ClusterSpec& c, const HardwareConfig& hw, int gpus) {
  LoadPath path{Medium::kRemote, "the pool over the network",
                std::min(hw.network.bandwidth, hw.pcie_h2d.bandwidth * gpus),
                hw.network.latency + hw.pcie_h2d.latency};
  if (c.pool_medium == Medium::kNvme) {
    path.bandwidth = std::min(path.bandwidth, hw.nvme.node_read_bandwidth() * c.pool_holders());
    path.latency += hw.nvme.latency;
  }
  return path;
}

// `cluster.network`: `topology: switch` (default) or `leaf_spine` with `nodes_per_leaf`, `uplink_bandwidth`
// and `uplink_latency`.
void parse_cluster_network(const ConfigNode& node, ClusterSpec& c) {
  node.allow_keys({"topology", "nodes_per_leaf", "uplink_bandwidth", "uplink_latency"});
  if (node.choice("topology", {"switch", "leaf_spine"}, "switch") == "switch") {
    for (const char* key : {"nodes_per_leaf", "uplink_bandwidth", "uplink_latency"}) {
      if (node.has(key)) node.child(key).fail("applies to topology: leaf_spine only");
    }
    return;
  }
  const int64_t per_leaf = node.integer("nodes_per_leaf");
  if (per_leaf < 1 || per_leaf > kMaxClusterInstances) {
    node.child("nodes_per_leaf").fail("expected 1 to " + std::to_string(kMaxClusterInstances) + " nodes");
  }
  c.network.nodes_per_leaf = static_cast<int>(per_leaf);
  c.network.uplink.bandwidth = node.quantity("uplink_bandwidth", UnitKind::kBandwidth);
  if (c.network.uplink.bandwidth <= 0) node.child("uplink_bandwidth").fail("expected a positive bandwidth");
  c.network.uplink.latency = node.quantity("uplink_latency", UnitKind::kDuration, 0.0);
}

// `cluster.disaggregation`: `prefill_instances` (the others decode) and `kv_transfer: whole | layerwise`.
Disaggregation parse_disaggregation(const ConfigNode& node, int instances) {
  node.allow_keys({"prefill_instances", "kv_transfer"});
  Disaggregation d;
  const int64_t prefill = node.integer("prefill_instances");
  if (prefill < 1 || prefill >= instances) {
    node.child("prefill_instances")
        .fail("expected 1 to " + std::to_string(instances - 1) + " of the cluster's " +
              std::to_string(instances) + " instances (the others decode)");
  }
  d.prefill_instances = static_cast<int>(prefill);
  d.layerwise = node.choice("kv_transfer", {"whole", "layerwise"}, "whole") == "layerwise";
  return d;
}

// `cluster:`: how many replicas, and the router in front of them. Replicas fill a node's GPUs before the
// next node.
void parse_cluster(const ConfigNode& root, Scenario& s) {
  std::optional<ConfigNode> node = root.optional_child("cluster");
  if (!node) return;
  node->allow_keys({"instances", "router", "pool", "network", "disaggregation"});
  ClusterSpec c;
  const int64_t instances = node->integer("instances");
  if (instances < 1 || instances > kMaxClusterInstances) {
    node->child("instances").fail("expected 1 to " + std::to_string(kMaxClusterInstances) + " instances");
  }
  c.instances = static_cast<int>(instances);
  c.instances_per_node = s.hardware.gpu.count / s.gpus;
  c.router.block_tokens = s.block_tokens;
  if (std::optional<ConfigNode> router = node->optional_child("router")) {
    router->allow_keys({"policy", "prefill_weight", "staleness"});
    std::vector<std::string> names;
    for (RouterPolicy p : router_policies()) names.emplace_back(router_policy_name(p));
    const std::string policy = router->choice("policy", names, router_policy_name(c.router.policy));
    for (RouterPolicy p : router_policies()) {
      if (policy == router_policy_name(p)) c.router.policy = p;
    }
    c.router.prefill_weight = router->number("prefill_weight", 1.0);
    if (c.router.prefill_weight < 0) router->child("prefill_weight").fail("expected a weight >= 0");
    c.router.staleness_s = router->quantity("staleness", UnitKind::kDuration, 0.0);
  }
  if (std::optional<ConfigNode> network = node->optional_child("network")) parse_cluster_network(*network, c);
  if (std::optional<ConfigNode> d = node->optional_child("disaggregation"))
    c.disaggregation = parse_disaggregation(*d, c.instances);
  if (std::optional<ConfigNode> pool = node->optional_child("pool")) {
    for (const TierSpec& tier : s.tiers) {
      if (tier.medium == Medium::kRemote)
        pool->fail("the instance already has a remote tier ('" + tier.name +
                   "'); a cluster's pool takes its place");
    }
    c.pool = parse_pool_tier(*pool, s.model, s.block_tokens);
    if (c.pool->capacity_blocks() < 1) pool->fail("expected a pool of at least one block");
    parse_pool_placement(*pool, c, s.hardware);
    check_pool_fits(*pool, c, root.boolean("allow_oversubscribe", false), s);
    if (s.hardware.network.bandwidth <= 0)
      pool->fail("the hardware file '" + s.hardware.name + "' has no network to reach a pool over");
    c.pool_load_path = pool_load_path(c, s.hardware, s.gpus);
  }
  s.cluster = c;
}

// Tier 0's capacity is what the instance leaves for KV; the file must not set it. The block size and tier
// 0's KV may come from the instance under vLLM's names.
void parse_cache(const ConfigNode& root, const VllmCacheKeys& vllm, Scenario& s) {
  ConfigNode cache = root.child("cache");
  cache.allow_keys({"block_tokens", "tiers"});
  std::optional<ConfigNode> block_tokens = cache.optional_child("block_tokens");
  if (vllm.block_size && block_tokens) fail_same_setting(*vllm.block_size, *block_tokens);
  if (vllm.block_size) block_tokens = vllm.block_size;
  if (block_tokens) {
    s.block_tokens = block_tokens->as_token_count();
    if (s.block_tokens <= 0 || s.block_tokens > kMaxBlockTokens)
      block_tokens->fail("expected a block size of 1 to 1048576 tokens");
  }
  ConfigNode tiers_node = cache.child("tiers");
  std::vector<ConfigNode> tiers = tiers_node.elements();
  if (tiers.empty()) tiers_node.fail("expected at least the hbm tier");
  std::optional<KvLayout> tier0_layout;
  if (vllm.kv_cache_dtype) {
    if (tiers[0].has("kv")) fail_same_setting(*vllm.kv_cache_dtype, tiers[0].child("kv"));
    tier0_layout = resolve_kv_layout(s.model, kv_preset_of(*vllm.kv_cache_dtype));
  }
  for (const char* key : {"capacity", "capacity_tokens", "capacity_blocks"}) {
    if (tiers[0].has(key)) {
      tiers[0].child(key).fail(
          "HBM's cache area is what the weights and activations leave; set "
          "instance.hbm_utilisation or instance.activation_reserve instead");
    }
  }
  // Whole bytes, rounded half to even as the scenario has always sized tier 0.
  auto tier0_bytes = static_cast<int64_t>(std::nearbyint(s.kv_space_bytes));
  // Hits load into the instance's GPUs, not the whole node's.
  HardwareConfig instance_hardware = s.hardware;
  instance_hardware.gpu.count = s.gpus;
  s.tiers = parse_tiers(tiers_node, s.model, s.block_tokens, tier0_bytes, &instance_hardware, tier0_layout);
}

void parse_slo(const ConfigNode& root, Scenario& s) {
  if (auto slo = root.optional_child("slo")) {
    slo->allow_keys({"ttft", "tpot"});
    s.slo.ttft_s = slo->quantity("ttft", UnitKind::kDuration, s.slo.ttft_s);
    s.slo.tpot_s = slo->quantity("tpot", UnitKind::kDuration, s.slo.tpot_s);
    if (s.slo.ttft_s <= 0) slo->child("ttft").fail("expected a positive duration");
    if (s.slo.tpot_s <= 0) slo->child("tpot").fail("expected a positive duration");
  }
}

}  // namespace

Scenario parse_scenario(const ConfigNode& root) {
  root.allow_keys({"name", "description", "model", "hardware", "calibration", "instance", "cache", "workload",
                   "slo", "seed", "sample_interval", "variants", "cost", "session_tokens",
                   "allow_oversubscribe", "cluster"});
  Scenario s;
  s.name = root.string("name");
  s.description = root.string("description", "");
  s.model = parse_model_card(load_config(root.string("model"), "models"));
  const std::optional<Calibration> calibration = load_scenario_calibration(root, s);
  s.hardware = load_hardware_with(root, calibration);
  if (calibration) {
    s.step_costs = serving_step_costs(*calibration, s.model);
    warn_of_another_reference(*calibration, s);
  }
  const VllmCacheKeys vllm = parse_instance(root.optional_child("instance"), root, s);
  parse_cache(root, vllm, s);
  parse_cluster(root, s);
  check_tiers_fit_the_node(root.child("cache").child("tiers").elements(),
                           root.boolean("allow_oversubscribe", false), s);
  s.tier_conversions = tier_conversion_rates(s, calibration);
  if (s.cluster && s.cluster->pool)
    s.cluster->pool_conversion = conversion_rates(s, calibration, s.cluster->pool->layout);
  parse_slo(root, s);
  s.seed = root.unsigned_integer("seed", 1);
  if (root.has("cost")) s.cost = parse_cost_file(load_config(root.string("cost"), "configs/costs"));
  s.session_tokens = root.token_count("session_tokens", s.session_tokens);
  if (s.session_tokens <= 0) root.child("session_tokens").fail("expected a positive number of tokens");
  s.sample_interval_s = root.quantity("sample_interval", UnitKind::kDuration, 1.0);
  if (s.sample_interval_s <= 0) root.child("sample_interval").fail("expected a positive duration");
  s.workload = root.child("workload");
  s.config = root;
  return s;
}

namespace {

struct VariantOverrides {
  std::string name;
  std::vector<Override> overrides;
};

// A variant's name becomes the folder of its results. `seen` maps each earlier name to its key path.
void check_variant_name(const ConfigNode& name_node, const std::string& name,
                        std::map<std::string, std::string>& seen) {
  if (name.empty()) name_node.fail("expected a non-empty variant name");
  if (name == "." || name == ".." || name.find('/') != std::string::npos || name.find('\0') != std::string::npos) {
    name_node.fail("expected a variant name usable as a folder name (no '/', not '.' or '..')");
  }
  auto [first, inserted] = seen.emplace(name, name_node.path());
  if (!inserted) name_node.fail("variant name '" + name + "' is already the name of " + first->second);
}

std::vector<VariantOverrides> read_variants(const ConfigNode& root) {
  if (!root.has("variants")) return {VariantOverrides{"", {}}};
  ConfigNode list = root.child("variants");
  std::vector<ConfigNode> elements = list.elements();
  if (elements.empty()) list.fail("expected at least one variant (or no variants key for one run)");
  std::vector<VariantOverrides> variants;
  std::map<std::string, std::string> names;
  for (const ConfigNode& v : elements) {
    v.allow_keys({"name", "set"});
    VariantOverrides variant{v.string("name"), {}};
    check_variant_name(v.child("name"), variant.name, names);
    if (auto set = v.optional_child("set")) {
      for (const std::string& key : set->keys()) {
        ConfigNode value = set->child(key);
        variant.overrides.push_back({key, value.as_string(), value.where()});
      }
    }
    variants.push_back(std::move(variant));
  }
  return variants;
}

std::string unread_message(const OverrideUse::Leaf& leaf, const std::vector<ScenarioRun>& runs,
                           const std::string& workload_kind) {
  if (leaf.state == OverrideUse::State::kReplaced) {
    return leaf.path + " is set again by " + leaf.replaced_by + ", so this value is never used";
  }
  std::string message = leaf.path + " is not read by this scenario";
  if (leaf.path.starts_with("workload.")) message += " (its workload is " + workload_kind + ")";
  if (runs.size() > 1) message += " in any variant";
  return message;
}

// `uses[0]` is the tree before the variants (where the variants themselves are read), then one per run;
// the first `given` overrides of each are the caller's, the rest the run's own set:.
void require_overrides_read(const std::vector<std::vector<OverrideUse>>& uses, size_t given,
                            const std::vector<ScenarioRun>& runs, const std::string& workload_kind) {
  for (size_t i = 0; i < given; ++i) {
    for (size_t leaf = 0; leaf < uses[0][i].leaves.size(); ++leaf) {
      auto read_in = [&](const std::vector<OverrideUse>& tree) {
        return tree[i].leaves[leaf].state == OverrideUse::State::kRead;
      };
      if (std::any_of(uses.begin(), uses.end(), read_in)) continue;
      // Unread in some run says more than replaced in every other.
      const OverrideUse::Leaf* shown = &uses.back()[i].leaves[leaf];
      for (size_t run = 1; run < uses.size(); ++run) {
        if (uses[run][i].leaves[leaf].state == OverrideUse::State::kUnread) shown = &uses[run][i].leaves[leaf];
      }
      throw ConfigError(uses[0][i].origin + ": " + unread_message(*shown, runs, workload_kind));
    }
  }
  for (size_t run = 1; run < uses.size(); ++run) {
    for (size_t i = given; i < uses[run].size(); ++i) {
      for (const OverrideUse::Leaf& leaf : uses[run][i].leaves) {
        if (leaf.state != OverrideUse::State::kRead) {
          throw ConfigError(uses[run][i].origin + ": " + unread_message(leaf, {}, workload_kind));
        }
      }
    }
  }
}

// An override of a hardware key (--set hardware.pcie.h2d_bandwidth=...) reaches into the hardware file the
// scenario names: the file is put inline first, its values located at the scenario's hardware: key.
void inline_hardware_for(ConfigNode& tree, const std::vector<Override>& overrides) {
  const bool sets_hardware = std::any_of(overrides.begin(), overrides.end(),
                                         [](const Override& o) { return o.path.starts_with("hardware."); });
  if (!sets_hardware || !tree.has("hardware") || !tree.child("hardware").is_scalar()) return;
  const ConfigNode name = tree.child("hardware");
  tree.inline_document("hardware", load_config(name.as_string(), "configs/hardware"),
                       "the hardware file '" + name.as_string() + "' (" + location_of(name) + ")");
}

}  // namespace

std::vector<Variant> parse_variants(const ConfigNode& root) {
  std::vector<Variant> variants;
  for (const VariantOverrides& v : read_variants(root)) {
    Variant variant{v.name, {}};
    for (const Override& o : v.overrides) variant.overrides.emplace_back(o.path, o.value);
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

Override parse_set_argument(const std::string& text) {
  auto [path, value] = parse_override(text);
  return {path, value, "--set " + text};
}

std::vector<ScenarioRun> plan_runs(const ConfigNode& file, const std::vector<Override>& overrides) {
  ConfigNode root = file.clone();
  inline_hardware_for(root, overrides);
  for (const Override& o : overrides) root.set(o.path, o.value, o.origin);
  std::vector<VariantOverrides> variants = read_variants(root);
  std::vector<std::vector<OverrideUse>> uses{root.override_uses()};
  std::vector<ScenarioRun> runs;
  std::string workload_kind;
  for (const VariantOverrides& v : variants) {
    ConfigNode tree = root.clone();
    inline_hardware_for(tree, v.overrides);
    for (const Override& o : v.overrides) tree.set(o.path, o.value, o.origin);
    Scenario scenario = parse_scenario(tree);
    std::string kind = validate_workload(scenario);
    if (workload_kind.empty()) workload_kind = kind;
    runs.push_back({v.name.empty() ? "run" : v.name, std::move(scenario)});
    uses.push_back(tree.override_uses());
  }
  require_overrides_read(uses, uses[0].size(), runs, workload_kind);
  return runs;
}

Override trace_override(const std::string& trace) {
  return {"workload", nlohmann::json{{"loop", "open"}, {"source", "trace"}, {"trace", trace}}.dump(),
          "--trace " + trace};
}

SchedulerConfig scheduler_config(const Scenario& s) {
  SchedulerConfig c;
  c.max_batch_tokens = s.max_batch_tokens;
  c.max_running = s.max_running;
  c.kv_space_bytes = s.kv_space_bytes;
  c.layerwise_overlap = s.layerwise_overlap;
  c.tier_conversions = s.tier_conversions;
  c.recompute_when_faster = s.recompute_when_faster;
  for (const TierSpec& tier : s.tiers) c.tier_load_paths.push_back(tier.load_path.value_or(LoadPath{}));
  if (s.cluster && s.cluster->pool) {  // the shared tier comes after the instance's own
    c.tier_conversions.push_back(s.cluster->pool_conversion);
    c.tier_load_paths.push_back(s.cluster->pool_load_path);
  }
  return c;
}

CostModel instance_cost_model(const Scenario& s) {
  HardwareConfig instance = s.hardware;
  instance.gpu.count = s.gpus;
  return CostModel(s.model, instance, static_cast<double>(s.tiers[0].layout.bytes_per_token()), s.step_costs);
}

}  // namespace kvtier
