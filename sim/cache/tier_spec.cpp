#include "sim/cache/tier_spec.h"

#include <map>
#include <set>

#include "sim/cache/lmcache_config.h"
#include "sim/core/checked_math.h"
#include "sim/core/config_files.h"

namespace kvtier {
namespace {

constexpr int kMaxTiers = 32;  // the cache keeps a block's tiers in a 32-bit mask

std::string capacity_limit() {
  return "at most " + std::to_string(kMaxCount) + " B (8 EiB), the largest capacity kvtier counts";
}

// `policy: s3fifo`, or with parameters `policy: {name: s3fifo, move_to_main_threshold: 1}`.
void parse_policy_key(const ConfigNode& node, TierSpec& tier) {
  if (!node.is_map()) {
    tier.policy = parse_policy(node);
    return;
  }
  node.allow_keys({"name", "move_to_main_threshold"});
  tier.policy = parse_policy(node.child("name"));
  if (!node.has("move_to_main_threshold")) return;
  ConfigNode threshold = node.child("move_to_main_threshold");
  if (tier.policy != PolicyKind::kS3Fifo) threshold.fail("applies to policy s3fifo only");
  int64_t references = threshold.as_integer();
  if (references < 1 || references > 3) {
    threshold.fail("expected 1, 2 or 3 references (frequencies are capped at 3)");
  }
  tier.policy_options.move_to_main_threshold = static_cast<int>(references);
}

int64_t parse_capacity_bytes(const ConfigNode& tier, int64_t bytes_per_block, int64_t block_tokens) {
  int given = tier.has("capacity") + tier.has("capacity_tokens") + tier.has("capacity_blocks");
  if (given != 1)
    tier.fail("expected exactly one of capacity (bytes with a unit), capacity_tokens, capacity_blocks");
  if (tier.has("capacity")) return parse_capacity(tier.child("capacity"));
  const char* key = tier.has("capacity_tokens") ? "capacity_tokens" : "capacity_blocks";
  int64_t count = tier.token_count(key);
  if (count < 0) tier.child(key).fail("expected a non-negative count");
  int64_t blocks = tier.has("capacity_tokens") ? count / block_tokens : count;
  std::optional<int64_t> bytes = checked_mul(blocks, bytes_per_block);
  if (!bytes) tier.child(key).fail("expected a count whose blocks hold " + capacity_limit());
  return *bytes;
}

template <typename Enum>
Enum parse_choice(const ConfigNode& tier, const char* key, const char* first, const char* second, Enum a,
                  Enum b, Enum fallback) {
  if (!tier.has(key)) return fallback;
  return tier.choice(key, {first, second}) == first ? a : b;
}

void parse_lower_tier_keys(const ConfigNode& node, TierSpec& tier) {
  tier.placement = parse_choice(node, "placement", "inclusive", "exclusive", Placement::kInclusive,
                                Placement::kExclusive, Placement::kInclusive);
  tier.write = parse_choice(node, "write", "spill", "through", WriteMode::kSpill, WriteMode::kThrough,
                            WriteMode::kSpill);
  tier.promote_on_hit = node.boolean("promote_on_hit", true);
  tier.admit_after = node.integer("admit_after", 1);
  if (tier.admit_after < 1) node.child("admit_after").fail("expected a count of requests, at least 1");
  if (tier.write == WriteMode::kThrough && tier.placement == Placement::kExclusive) {
    node.child("write").fail(
        "write-through keeps a copy in the tier above, so it needs placement: inclusive");
  }
  if (!tier.promote_on_hit && tier.placement == Placement::kExclusive) {
    node.child("promote_on_hit")
        .fail("promote_on_hit: false keeps the block only here, so it needs placement: inclusive");
  }
}

// Tier 0 is HBM and no lower tier is.
Medium parse_tier_medium(const ConfigNode& tier, size_t index) {
  if (!tier.has("medium")) {
    tier.fail("missing required key 'medium': where the tier's KV lives (hbm, dram, nvme or remote)");
  }
  ConfigNode node = tier.child("medium");
  std::vector<std::string> media;
  for (Medium m : kMedia) media.emplace_back(medium_name(m));
  std::optional<Medium> medium = parse_medium(node.as_choice(media));
  if (index == 0 && *medium != Medium::kHbm) node.fail("tier 0 holds running requests, so its medium is hbm");
  if (index > 0 && *medium == Medium::kHbm) node.fail("a lower tier is dram, nvme or remote; hbm is tier 0's");
  return *medium;
}

// A medium the hardware has: its load path (none for HBM).
std::optional<LoadPath> load_path_on(const HardwareConfig& hardware, const ConfigNode& tier, Medium medium) {
  std::optional<LoadPath> path = load_path(hardware, medium);
  if (path || medium == Medium::kHbm) return path;
  const char* lacks = medium == Medium::kNvme ? "NVMe drives (nvme.drives)" : "network (network.bandwidth)";
  tier.child("medium").fail("the hardware file '" + hardware.name + "' has no " + lacks + ", so there is no " +
                            std::string(medium_name(medium)) + " tier");
}

// `medium`, when given, is the tier's medium, and the map has no `medium` key; `given_layout` is its
// layout, and the map has no `kv` key.
// `definition` names the schema definition the map's keys go to (schema: the pool's are its own), and
// `more_keys` keys the map may have beside a tier's, which the caller reads.
TierSpec parse_tier(const ConfigNode& node, size_t index, const ModelCard& model, int64_t block_tokens,
                    const std::optional<int64_t>& given_capacity_bytes, std::optional<Medium> medium = {},
                    const std::optional<KvLayout>& given_layout = {}, const char* definition = "tier",
                    const std::vector<std::string>& more_keys = {}) {
  node.schema_definition(definition);
  std::vector<std::string> keys = {
      "medium",       "name",      "capacity", "capacity_tokens", "capacity_blocks", "kv",           "policy",
      "prefix_aware", "placement", "write",    "promote_on_hit",  "admit_after",     "recency_order"};
  keys.insert(keys.end(), more_keys.begin(), more_keys.end());
  node.allow_keys(keys);
  TierSpec tier;
  tier.medium = medium ? *medium : parse_tier_medium(node, index);
  tier.name = node.string("name", medium_name(tier.medium));
  tier.block_tokens = block_tokens;
  if (given_layout) {
    tier.layout = *given_layout;
  } else {
    ConfigNode kv = node.child("kv");
    tier.layout =
        build_layout(model, parse_precision_map(kv), kv.is_scalar() ? kv.as_string() : tier.name + ".kv");
  }
  tier.capacity_bytes = given_capacity_bytes ? *given_capacity_bytes
                                             : parse_capacity_bytes(node, tier.bytes_per_block(), block_tokens);
  if (node.has("policy")) parse_policy_key(node.child("policy"), tier);
  tier.prefix_aware = node.boolean("prefix_aware", false);
  tier.recency_order = parse_choice(node, "recency_order", "first_block_most_recent", "last_block_most_recent",
                                    RecencyOrder::kFirstBlockMostRecent, RecencyOrder::kLastBlockMostRecent,
                                    RecencyOrder::kFirstBlockMostRecent);
  if (index == 0) {
    for (const char* key : {"placement", "write", "promote_on_hit", "admit_after"}) {
      if (node.has(key))
        node.child(key).fail("applies to lower tiers only; tier 0 holds every running request");
    }
  } else {
    parse_lower_tier_keys(node, tier);
  }
  return tier;
}

}  // namespace

TierSpec parse_pool_tier(const ConfigNode& node, const ModelCard& model, int64_t block_tokens) {
  // `nodes` and `medium` place the pool on a cluster's nodes: the cluster's parser reads them.
  node.allow_keys({"name", "kv", "capacity", "policy", "recency_order", "nodes", "medium"});
  TierSpec pool = parse_tier(node, 1, model, block_tokens, std::nullopt, Medium::kRemote, std::nullopt,
                             "pool", {"nodes"});
  pool.name = node.string("name", "pool");
  return pool;
}

PolicyKind parse_policy(const ConfigNode& node) {
  PolicyKind kind = PolicyKind::kLru;
  parse_policy_name(node.as_choice(policy_names()), kind);
  return kind;
}

int64_t parse_capacity(const ConfigNode& node) {
  std::optional<int64_t> bytes = checked_to_int64(node.as_quantity(UnitKind::kBytes));
  if (!bytes) node.fail("expected a size of " + capacity_limit());
  return *bytes;
}

std::vector<TierSpec> parse_tiers(const ConfigNode& tiers, const ModelCard& model, int64_t block_tokens,
                                  std::optional<int64_t> tier0_capacity_bytes, const HardwareConfig* hardware,
                                  const std::optional<KvLayout>& tier0_layout) {
  if (block_tokens <= 0) throw ConfigError(tiers.file() + ": block size must be positive to size the tiers");
  if (!tiers.is_sequence()) tiers.fail("expected a list of tiers, fastest first");
  std::vector<ConfigNode> elements = tiers.elements();
  if (elements.empty()) tiers.fail("expected at least one tier");
  if (elements.size() > kMaxTiers) tiers.fail("expected at most 32 tiers");
  std::vector<TierSpec> specs;
  std::set<std::string> names;
  const std::optional<int64_t> from_keys;
  std::map<Medium, size_t> tier_of_medium;
  for (size_t i = 0; i < elements.size(); ++i) {
    specs.push_back(parse_tier(elements[i], i, model, block_tokens, i == 0 ? tier0_capacity_bytes : from_keys,
                               std::nullopt, i == 0 ? tier0_layout : std::nullopt));
    TierSpec& tier = specs.back();
    auto [first, inserted] = tier_of_medium.emplace(tier.medium, i);
    if (!inserted) {
      const std::string medium(medium_name(tier.medium));
      elements[i].child("medium").fail("tiers[" + std::to_string(first->second) + "] is already the " + medium +
                                       " tier; the hardware has one " + medium + ", so one tier per medium");
    }
    if (hardware) tier.load_path = load_path_on(*hardware, elements[i], tier.medium);
    if (!names.insert(tier.name).second) elements[i].child("name").fail("tier names must be unique");
  }
  return specs;
}

TierSpec parse_hbm_tier(const ConfigNode& node, const ModelCard& model, int64_t block_tokens) {
  if (!node.is_map()) node.fail("expected a map of the HBM tier's keys (capacity, kv, policy, ...)");
  if (node.has("medium")) node.child("medium").fail("this is the HBM tier (tier 0); it takes no medium");
  return parse_tier(node, 0, model, block_tokens, std::nullopt, Medium::kHbm);
}

TierFile load_tier_file(const std::string& spec) {
  ConfigNode root = load_config(spec, "configs/tiers");
  if (!root.has("tiers") && is_lmcache_config(root)) return {root, true, lmcache_chunk_tokens(root)};
  root.allow_keys({"tiers"});
  return {root, false, std::nullopt};
}

FileTiers parse_tier_file(const TierFile& file, const ModelCard& model, int64_t block_tokens) {
  if (file.lmcache) return parse_lmcache_tiers(file.root, model, block_tokens);
  ConfigNode list = file.root.child("tiers");
  FileTiers out{parse_tiers(list, model, block_tokens), {}, {}, list};
  for (const ConfigNode& element : list.elements()) {
    out.medium_keys.push_back(element.child("medium"));
    out.kv_keys.push_back(element.child("kv"));
  }
  return out;
}

TierSpec single_tier(const KvLayout& layout, int64_t block_tokens, int64_t capacity_bytes,
                     PolicyKind policy) {
  TierSpec tier;
  tier.name = "cache";
  tier.layout = layout;
  tier.block_tokens = block_tokens;
  tier.capacity_bytes = capacity_bytes;
  tier.policy = policy;
  return tier;
}

}  // namespace kvtier
