// The tiers of a cache hierarchy, as configuration describes them.
//
// Tier 0 is where running requests' KV lives (HBM); tiers 1, 2, ... are slower and larger (DRAM, NVMe, a
// remote pool), one tier per medium: a tier says which medium it is (`medium:`), and its name is only a
// label. Parsed for a node's hardware, each lower tier also carries the path its hits are loaded over,
// derived once from its medium and that hardware, and a medium the hardware lacks is refused. Each tier stores blocks in its own KV layout, so a DRAM tier can hold 4-bit blocks while
// HBM holds bf16 (quantize on offload); its capacity in blocks is its bytes divided by its bytes per block.
// How blocks reach a lower tier and leave it is set per lower tier:
//   placement  inclusive: a block promoted to tier 0 keeps its copy here;
//              exclusive: it moves (a block here is in no tier above);
//   write      spill: blocks arrive when a tier above evicts them;
//              through: blocks are copied here when stored in the tier just above (then dropped above
//              on eviction, since the copy exists);
//   promote_on_hit  false: a hit served from here is loaded into tier 0 for the request only and
//              discarded from tier 0 when the request ends (needs inclusive placement);
//   admit_after  the number of requests that must have referenced a block before it is stored here
//              (2: "only blocks seen twice go to NVMe").
// See docs/cache.md for the YAML keys.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/breakeven.h"
#include "sim/core/config.h"
#include "sim/cache/eviction_policy.h"
#include "sim/core/hardware.h"
#include "sim/core/kv_layout.h"
#include "sim/core/medium.h"
#include "sim/core/model_card.h"

namespace kvtier {

enum class Placement { kInclusive, kExclusive };
enum class WriteMode { kSpill, kThrough };

// The order in which a finished request's blocks become recent again in this tier's policy (its LRU
// order, its FIFO queues): released last block first, the request's first block ends up the most recent
// (vLLM frees a request's blocks in this order); released in request order, its last block does, as a
// plain block trace of the request would leave them.
enum class RecencyOrder { kFirstBlockMostRecent, kLastBlockMostRecent };

struct TierSpec {
  std::string name;  // a label in outputs: the medium's name unless the file gives one
  Medium medium = Medium::kHbm;
  // How a hit here reaches HBM on the hardware the tiers were parsed for; absent for tier 0 and where no
  // hardware was given (the hit-rate mode).
  std::optional<LoadPath> load_path;
  KvLayout layout;
  int64_t block_tokens = 0;
  int64_t capacity_bytes = 0;
  PolicyKind policy = PolicyKind::kLru;
  PolicyOptions policy_options;
  bool prefix_aware = false;  // evict leaves first; drop blocks whose parent left the hierarchy
  Placement placement = Placement::kInclusive;
  WriteMode write = WriteMode::kSpill;
  bool promote_on_hit = true;
  int64_t admit_after = 1;
  RecencyOrder recency_order = RecencyOrder::kFirstBlockMostRecent;

  int64_t bytes_per_block() const { return layout.bytes_per_block(block_tokens); }
  int64_t capacity_blocks() const { return capacity_bytes / bytes_per_block(); }
};

// Parses a `tiers:` sequence. Each element is a map with keys medium (hbm for tier 0; dram, nvme or remote
// below it, each at most once), name (default: the medium's), capacity (bytes with a unit, or
// capacity_tokens / capacity_blocks), kv (a preset name or a precision map), policy, prefix_aware, and for
// tiers after the first placement, write, promote_on_hit, admit_after. `tier0_capacity_bytes`, when given,
// is tier 0's capacity (a scenario sizes HBM from what the weights leave; REQUIRES: tier 0 then names no
// capacity key, which the caller rejects in its own words). `hardware`, when given, is the node (with the
// GPUs that load) the tiers live on: every medium must exist on it, and each lower tier gets its load_path.
// `tier0_layout`, when given, is tier 0's KV layout (a scenario's instance.kv_cache_dtype; REQUIRES: tier 0
// then has no kv key, which the caller rejects in its own words).
// Throws ConfigError located at the offending key.
// `policy` is a name or a map {name, move_to_main_threshold}; every tier takes `recency_order`.
std::vector<TierSpec> parse_tiers(const ConfigNode& tiers, const ModelCard& model, int64_t block_tokens,
                                  std::optional<int64_t> tier0_capacity_bytes = std::nullopt,
                                  const HardwareConfig* hardware = nullptr,
                                  const std::optional<KvLayout>& tier0_layout = std::nullopt);

// A cluster's shared KV pool (a scenario's `cluster.pool`): a tier below every instance's own tiers, shared
// by all of them and reached over the network, so its medium is `remote`. Keys: name (default "pool"), kv,
// capacity (bytes with a unit), policy, recency_order. Throws ConfigError located at the
// offending key.
TierSpec parse_pool_tier(const ConfigNode& node, const ModelCard& model, int64_t block_tokens);
// A tier's `policy` value (a name of policy_names()), and a size in bytes with a unit that kvtier can count
// (at most 8 EiB); both throw ConfigError located at `node`. LMCache files size and name their tiers so too.
PolicyKind parse_policy(const ConfigNode& node);
int64_t parse_capacity(const ConfigNode& node);

// Tier 0 from a map of tier-0 keys without `medium` (it is hbm): name, capacity (or capacity_tokens,
// capacity_blocks), kv, policy, prefix_aware, recency_order. An LMCache file's extra_config.kvtier_hbm.
TierSpec parse_hbm_tier(const ConfigNode& node, const ModelCard& model, int64_t block_tokens);

// A tier file, by path or built-in name (configs/tiers): kvtier's own, a map with the one key `tiers` (for
// parse_tiers), or an LMCache configuration (lmcache_config.h), told apart by that key: a file without
// `tiers` that has LMCache's keys is LMCache's. `kvtier hitrate --tiers` and `kvtier-hw replay --tiers` read
// the same files.
struct TierFile {
  ConfigNode root;
  bool lmcache = false;
  // The block size the file sets: an LMCache file's chunk_size (LMCache's default, 256, when absent).
  // kvtier's files have none; their tiers take the caller's.
  std::optional<int64_t> block_tokens;
};
TierFile load_tier_file(const std::string& spec);

// A tier file's tiers, and for each the keys an error found after parsing names (the hardware store's).
struct FileTiers {
  std::vector<TierSpec> tiers;
  std::vector<ConfigNode> medium_keys;  // what chose each tier's medium: tiers[t].medium, or LMCache's key
  std::vector<ConfigNode> kv_keys;      // what chose each tier's layout: tiers[t].kv, or the HBM tier's kv
  ConfigNode hierarchy;                 // the whole list: `tiers`, or the LMCache file
};
// The tiers of `file` in blocks of `block_tokens`. Throws ConfigError located at the offending key; for an
// LMCache file also when block_tokens is not its chunk_size (kvtier has one block size for every tier).
FileTiers parse_tier_file(const TierFile& file, const ModelCard& model, int64_t block_tokens);

// A one-tier hierarchy: `capacity_bytes` of `layout` under `policy`, the fast mode's single-cache case.
TierSpec single_tier(const KvLayout& layout, int64_t block_tokens, int64_t capacity_bytes, PolicyKind policy);

}  // namespace kvtier
