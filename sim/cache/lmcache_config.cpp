#include "sim/cache/lmcache_config.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/checked_math.h"

namespace kvtier {
namespace {

constexpr int64_t kDefaultChunkTokens = 256;           // LMCache's chunk_size default
constexpr int64_t kMaxChunkTokens = int64_t{1} << 20;  // a scenario's largest block
constexpr double kDefaultCpuGb = 5.0;                  // LMCache's max_local_cpu_size default
constexpr double kBytesPerGb = 1073741824.0;           // LMCache's GB: int(size * 1024**3) bytes

// What kvtier does with an LMCache key.
enum class Use {
  kModelled,   // read into the tiers
  kIgnored,    // accepted with any value: it changes nothing kvtier models
  kFalseOnly,  // a feature kvtier cannot model: accepted when false (LMCache's default)
  kUnsetOnly,  // a backend or hook kvtier cannot model: accepted when absent or null
  kVersion0,   // LMCache v0's configuration, which v1 ignores
};

struct KeyRule {
  std::string_view key;
  Use use;
  std::string_view why;  // for refusals: why kvtier cannot model it
};

constexpr std::string_view kBlending =
    "CacheBlend reuses the KV of chunks that are not a prefix, recomputing a share of it; kvtier's cache "
    "reuses prefixes only";
constexpr std::string_view kPeers =
    "chunks come from other instances' caches; kvtier models one instance's tiers";
constexpr std::string_view kDisaggregated =
    "disaggregated prefill sends KV from a prefill instance to a decode instance; kvtier models one "
    "instance that prefills and decodes";
constexpr std::string_view kDecode =
    "kvtier's cache holds the blocks of requests' prompts: a request's decode KV is freed when it ends";
constexpr std::string_view kOtherDisk =
    "a GPUDirect storage backend beside local_disk, with no size in the file; kvtier has one nvme tier, "
    "local_disk's";
constexpr std::string_view kPlugins = "a backend or hook kvtier cannot know";

constexpr std::array kRules = {
    // The tiers.
    KeyRule{"chunk_size", Use::kModelled, ""},
    KeyRule{"local_cpu", Use::kModelled, ""},
    KeyRule{"max_local_cpu_size", Use::kModelled, ""},
    KeyRule{"local_disk", Use::kModelled, ""},
    KeyRule{"max_local_disk_size", Use::kModelled, ""},
    KeyRule{"remote_url", Use::kModelled, ""},
    KeyRule{"remote_serde", Use::kModelled, ""},
    KeyRule{"cache_policy", Use::kModelled, ""},
    KeyRule{"save_unfull_chunk", Use::kModelled, ""},
    KeyRule{"extra_config", Use::kModelled, ""},
    // Timing only: when copies happen, not what is cached where.
    KeyRule{"use_layerwise", Use::kIgnored, ""},
    KeyRule{"enable_async_loading", Use::kIgnored, ""},
    KeyRule{"store_async", Use::kIgnored, ""},
    KeyRule{"blocking_timeout_secs", Use::kIgnored, ""},
    // Names, ports, management and the process.
    KeyRule{"lmcache_instance_id", Use::kIgnored, ""},
    KeyRule{"enable_controller", Use::kIgnored, ""},
    KeyRule{"controller_url", Use::kIgnored, ""},
    KeyRule{"controller_pull_url", Use::kIgnored, ""},
    KeyRule{"controller_reply_url", Use::kIgnored, ""},
    KeyRule{"lmcache_worker_port", Use::kIgnored, ""},
    KeyRule{"lmcache_worker_ports", Use::kIgnored, ""},
    KeyRule{"lmcache_worker_ids", Use::kIgnored, ""},
    KeyRule{"lmcache_worker_heartbeat_delay_time", Use::kIgnored, ""},
    KeyRule{"lmcache_worker_heartbeat_time", Use::kIgnored, ""},
    KeyRule{"internal_api_server_enabled", Use::kIgnored, ""},
    KeyRule{"internal_api_server_host", Use::kIgnored, ""},
    KeyRule{"internal_api_server_port_start", Use::kIgnored, ""},
    KeyRule{"internal_api_server_include_index_list", Use::kIgnored, ""},
    KeyRule{"internal_api_server_socket_path_prefix", Use::kIgnored, ""},
    KeyRule{"py_enable_gc", Use::kIgnored, ""},
    KeyRule{"numa_mode", Use::kIgnored, ""},
    KeyRule{"error_handling", Use::kIgnored, ""},
    KeyRule{"pre_caching_hash_algorithm", Use::kIgnored, ""},
    // Settings of the features refused below, which do nothing while those are off.
    KeyRule{"blend_recompute_ratio", Use::kIgnored, ""},
    KeyRule{"blend_recompute_ratios", Use::kIgnored, ""},
    KeyRule{"blend_thresholds", Use::kIgnored, ""},
    KeyRule{"blend_check_layers", Use::kIgnored, ""},
    KeyRule{"blend_min_tokens", Use::kIgnored, ""},
    KeyRule{"blend_special_str", Use::kIgnored, ""},
    KeyRule{"lookup_url", Use::kIgnored, ""},
    KeyRule{"distributed_url", Use::kIgnored, ""},
    KeyRule{"p2p_host", Use::kIgnored, ""},
    KeyRule{"p2p_init_ports", Use::kIgnored, ""},
    KeyRule{"p2p_lookup_ports", Use::kIgnored, ""},
    KeyRule{"pd_role", Use::kIgnored, ""},
    KeyRule{"pd_buffer_size", Use::kIgnored, ""},
    KeyRule{"pd_buffer_device", Use::kIgnored, ""},
    KeyRule{"pd_peer_host", Use::kIgnored, ""},
    KeyRule{"pd_peer_init_port", Use::kIgnored, ""},
    KeyRule{"pd_peer_alloc_port", Use::kIgnored, ""},
    KeyRule{"pd_proxy_host", Use::kIgnored, ""},
    KeyRule{"pd_proxy_port", Use::kIgnored, ""},
    KeyRule{"transfer_channel", Use::kIgnored, ""},
    KeyRule{"nixl_role", Use::kIgnored, ""},
    KeyRule{"nixl_receiver_host", Use::kIgnored, ""},
    KeyRule{"nixl_receiver_port", Use::kIgnored, ""},
    KeyRule{"nixl_buffer_size", Use::kIgnored, ""},
    KeyRule{"nixl_buffer_device", Use::kIgnored, ""},
    KeyRule{"nixl_enable_gc", Use::kIgnored, ""},
    KeyRule{"nixl_backends", Use::kIgnored, ""},
    KeyRule{"nixl_peer_host", Use::kIgnored, ""},
    KeyRule{"nixl_peer_init_port", Use::kIgnored, ""},
    KeyRule{"nixl_peer_alloc_port", Use::kIgnored, ""},
    KeyRule{"nixl_proxy_host", Use::kIgnored, ""},
    KeyRule{"nixl_proxy_port", Use::kIgnored, ""},
    KeyRule{"cufile_buffer_size", Use::kIgnored, ""},
    // Features kvtier cannot model.
    KeyRule{"enable_blending", Use::kFalseOnly, kBlending},
    KeyRule{"enable_p2p", Use::kFalseOnly, kPeers},
    KeyRule{"enable_pd", Use::kFalseOnly, kDisaggregated},
    KeyRule{"enable_xpyd", Use::kFalseOnly, kDisaggregated},
    KeyRule{"enable_nixl", Use::kFalseOnly, kDisaggregated},
    KeyRule{"save_decode_cache", Use::kFalseOnly, kDecode},
    KeyRule{"gds_path", Use::kUnsetOnly, kOtherDisk},
    KeyRule{"weka_path", Use::kUnsetOnly, kOtherDisk},
    KeyRule{"maru_path", Use::kUnsetOnly, "a CXL shared-memory pool; kvtier has no such medium"},
    KeyRule{"external_backends", Use::kUnsetOnly, kPlugins},
    KeyRule{"storage_plugins", Use::kUnsetOnly, kPlugins},
    KeyRule{"external_lookup_client", Use::kUnsetOnly, "an external service decides what hits"},
    // LMCache v0.
    KeyRule{"local_device", Use::kVersion0, ""},
    KeyRule{"max_local_cache_size", Use::kVersion0, ""},
    KeyRule{"pipelined_backend", Use::kVersion0, ""},
};

const KeyRule* rule_of(std::string_view key) {
  auto it = std::find_if(kRules.begin(), kRules.end(), [&](const KeyRule& r) { return r.key == key; });
  return it == kRules.end() ? nullptr : &*it;
}

std::vector<std::string> rule_keys() {
  std::vector<std::string> keys;
  for (const KeyRule& r : kRules) keys.emplace_back(r.key);
  return keys;
}

// A boolean as LMCache's YAML reader (PyYAML, YAML 1.1) reads one.
bool yaml11_bool(const ConfigNode& node) {
  static constexpr std::array<std::string_view, 9> kTrue = {"true", "True", "TRUE", "yes", "Yes",
                                                            "YES",  "on",   "On",   "ON"};
  static constexpr std::array<std::string_view, 9> kFalse = {"false", "False", "FALSE", "no", "No",
                                                             "NO",    "off",   "Off",   "OFF"};
  const std::string text = node.as_string();
  if (std::find(kTrue.begin(), kTrue.end(), text) != kTrue.end()) return true;
  if (std::find(kFalse.begin(), kFalse.end(), text) != kFalse.end()) return false;
  node.fail("expected true or false, got '" + text + "'");
}

bool flag(const ConfigNode& root, std::string_view key, bool fallback) {
  return root.has(key) ? yaml11_bool(root.child(key)) : fallback;
}

// LMCache's size in GB (2^30 bytes) as bytes, truncated as LMCache does.
int64_t gb_bytes(const ConfigNode& root, std::string_view key, double fallback) {
  if (!root.has(key)) return static_cast<int64_t>(fallback * kBytesPerGb);
  ConfigNode node = root.child(key);
  const double gb = node.as_number();
  if (gb < 0) node.fail("expected a size in GB (LMCache's GB: 2^30 bytes), at least 0");
  std::optional<int64_t> bytes = checked_to_int64(std::floor(gb * kBytesPerGb));
  if (!bytes)
    node.fail("expected a size of at most 8 EiB (8589934592 GB), the largest capacity kvtier counts");
  return *bytes;
}

void check_rules(const ConfigNode& root) {
  for (const std::string& key : root.keys()) {
    const KeyRule* rule = rule_of(key);
    if (!rule) {
      const std::string hint = closest_match(key, rule_keys());
      root.child(key).fail("not an LMCache key kvtier reads" +
                           (hint.empty() ? std::string() : " (did you mean '" + hint + "'?)") +
                           "; docs/config-reference.md lists what an LMCache file may hold");
    }
    if (!root.has(key)) continue;  // null: LMCache's default
    ConfigNode node = root.child(key);
    switch (rule->use) {
      case Use::kModelled:
      case Use::kIgnored:
        break;
      case Use::kFalseOnly:
        if (yaml11_bool(node)) node.fail("kvtier cannot model this: " + std::string(rule->why));
        break;
      case Use::kUnsetOnly:
        node.fail("kvtier cannot model this: " + std::string(rule->why));
      case Use::kVersion0:
        node.fail(
            "an LMCache v0 key, which LMCache v1 ignores; kvtier reads v1's configuration (v0's "
            "local_device: cpu with max_local_cache_size is v1's local_cpu: true with max_local_cpu_size)");
    }
  }
  root.allow_keys(rule_keys());  // passes by now; tells the schema (config_schema.h) the keys
}

PolicyKind lmcache_policy(const ConfigNode& root) {
  if (!root.has("cache_policy")) return PolicyKind::kLru;
  ConfigNode node = root.child("cache_policy");
  std::string name = node.as_string();
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
  if (name == "LRU") return PolicyKind::kLru;
  if (name == "LFU") return PolicyKind::kLfu;
  node.fail(
      "'" + node.as_string() +
      "': kvtier models LMCache's LRU and LFU (as its lru and lfu), not LMCache's other policies (FIFO, "
      "MRU, COST_AWARE)");
}

// A tier below HBM as LMCache keeps it: inclusive, written through, the request's last chunk the most
// recent.
TierSpec lower_tier(Medium medium, const TierSpec& hbm, int64_t capacity_bytes, PolicyKind policy) {
  TierSpec tier;
  tier.name = std::string(medium_name(medium));
  tier.medium = medium;
  tier.layout = hbm.layout;
  tier.block_tokens = hbm.block_tokens;
  tier.capacity_bytes = capacity_bytes;
  tier.policy = policy;
  tier.placement = Placement::kInclusive;
  tier.write = WriteMode::kThrough;
  tier.recency_order = RecencyOrder::kLastBlockMostRecent;
  return tier;
}

// extra_config.kvtier_remote: {capacity, policy}, the remote store's size (LMCache's file has none).
TierSpec remote_tier(const ConfigNode& node, const TierSpec& hbm) {
  if (!node.is_map())
    node.fail("expected a map {capacity: <bytes with a unit>, policy: <lru, lfu, arc or s3fifo>}");
  node.allow_keys({"capacity", "policy"});
  if (!node.has("capacity")) {
    node.fail("missing required key 'capacity': the remote store's size, which LMCache's file does not give");
  }
  const int64_t bytes = parse_capacity(node.child("capacity"));
  const PolicyKind policy = node.has("policy") ? parse_policy(node.child("policy")) : PolicyKind::kLru;
  return lower_tier(Medium::kRemote, hbm, bytes, policy);
}

void check_remote(const ConfigNode& root) {
  ConfigNode url = root.child("remote_url");
  const std::string text = url.as_string();
  if (text.find("://") == std::string::npos || text.starts_with("://")) {
    url.fail("expected a URL such as lm://host:65432 or redis://host:6379, got '" + text + "'");
  }
  if (root.has("remote_serde")) {
    ConfigNode serde = root.child("remote_serde");
    const std::string name = serde.as_string();
    if (name == "cachegen") {
      serde.fail(
          "kvtier cannot model this: CacheGen stores the remote copy as a compressed bitstream, which "
          "is no KV layout kvtier has; naive stores vLLM's KV bytes unchanged");
    }
    if (name != "naive")
      serde.fail("expected naive (or cachegen, which kvtier cannot model), got '" + name + "'");
  }
}

}  // namespace

bool is_lmcache_config(const ConfigNode& root) {
  const std::vector<std::string> keys = root.keys();
  return std::any_of(keys.begin(), keys.end(),
                     [](const std::string& key) { return rule_of(key) != nullptr; });
}

int64_t lmcache_chunk_tokens(const ConfigNode& root) {
  if (!root.has("chunk_size")) return kDefaultChunkTokens;
  ConfigNode node = root.child("chunk_size");
  const int64_t tokens = node.as_integer();
  if (tokens < 1 || tokens > kMaxChunkTokens) node.fail("expected a chunk of 1 to 1048576 tokens");
  return tokens;
}

FileTiers parse_lmcache_tiers(const ConfigNode& root, const ModelCard& model, int64_t block_tokens) {
  check_rules(root);
  const int64_t chunk = lmcache_chunk_tokens(root);
  if (block_tokens != chunk) {
    const std::string what =
        "LMCache stores chunks of " + std::to_string(chunk) +
        " tokens, and kvtier has one block size for every tier, but the blocks here are " +
        std::to_string(block_tokens) +
        " tokens; leave --block-tokens out (the chunk size is then the block size) or give --block-tokens " +
        std::to_string(chunk);
    if (root.has("chunk_size")) root.child("chunk_size").fail(what);
    root.fail("chunk_size (LMCache's default, 256): " + what);
  }
  if (!root.has("extra_config") || !root.child("extra_config").is_map() ||
      !root.child("extra_config").has("kvtier_hbm")) {
    const std::string what =
        "missing extra_config.kvtier_hbm: vLLM's GPU prefix cache, which an LMCache file does not describe, "
        "is kvtier's tier 0; add extra_config: {kvtier_hbm: {capacity: 40GiB, kv: bf16}} (LMCache ignores "
        "extra_config entries it does not know)";
    if (root.has("extra_config")) root.child("extra_config").fail(what);
    root.fail(what);
  }
  ConfigNode extra = root.child("extra_config");
  for (const std::string& key : extra.keys()) {
    if (key != "kvtier_hbm" && key != "kvtier_remote") {
      extra.child(key).fail(
          "an LMCache extra setting kvtier does not model; extra_config holds kvtier's kvtier_hbm and "
          "kvtier_remote");
    }
  }
  extra.allow_keys({"kvtier_hbm", "kvtier_remote"});  // passes by now; tells the schema the keys
  ConfigNode hbm_node = extra.child("kvtier_hbm");
  FileTiers out{{parse_hbm_tier(hbm_node, model, block_tokens)}, {hbm_node}, {hbm_node.child("kv")}, root};
  const TierSpec hbm = out.tiers[0];  // a copy: out.tiers grows below
  const PolicyKind policy = lmcache_policy(root);
  // Checked, no effect: kvtier stores a request's partial last block in every tier (config-reference.md).
  (void)flag(root, "save_unfull_chunk", false);

  // Without local_cpu LMCache keeps no CPU copies: its buffer then only stages copies.
  const int64_t cpu_bytes = gb_bytes(root, "max_local_cpu_size", kDefaultCpuGb);
  if (flag(root, "local_cpu", true)) {
    ConfigNode size = root.has("max_local_cpu_size") ? root.child("max_local_cpu_size") : root;
    if (cpu_bytes <= 0) {
      size.fail(
          "local_cpu: true needs a positive max_local_cpu_size (GB): the CPU buffer every store goes "
          "through");
    }
    out.tiers.push_back(lower_tier(Medium::kDram, hbm, cpu_bytes, policy));
    out.medium_keys.push_back(root.has("local_cpu") ? root.child("local_cpu") : size);
  }
  // LMCache makes a disk backend only for a local_disk path with a positive max_local_disk_size.
  const int64_t disk_bytes = gb_bytes(root, "max_local_disk_size", 0);
  if (root.has("local_disk")) {
    ConfigNode disk = root.child("local_disk");
    if (disk.as_string().empty()) disk.fail("expected a path such as file:///local/disk/, or null for none");
    if (disk_bytes > 0) {
      out.tiers.push_back(lower_tier(Medium::kNvme, hbm, disk_bytes, policy));
      out.medium_keys.push_back(disk);
    }
  }
  if (root.has("remote_url")) {
    check_remote(root);
    if (!extra.has("kvtier_remote")) {
      root.child("remote_url")
          .fail(
              "LMCache's file does not size the remote store; give its size as extra_config: {kvtier_remote: "
              "{capacity: 1TiB}}");
    }
    out.tiers.push_back(remote_tier(extra.child("kvtier_remote"), hbm));
    out.medium_keys.push_back(root.child("remote_url"));
  } else if (extra.has("kvtier_remote")) {
    extra.child("kvtier_remote").fail("sizes the remote store of remote_url, which this file does not give");
  }
  const ConfigNode hbm_kv = out.kv_keys[0];
  while (out.kv_keys.size() < out.tiers.size()) out.kv_keys.push_back(hbm_kv);
  return out;
}

}  // namespace kvtier
