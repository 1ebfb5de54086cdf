// What the TieredStore tests share, on the CPU reference and on a GPU: tier configurations, request
// sequences, and the replay that checks data integrity and hit counts after every request.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "hw/store/block_pattern.h"
#include "sim/cache/cache_test_support.h"
#include "sim/core/kv_layout.h"
#include "hw/store/store_error.h"
#include "hw/store/tiered_store.h"
#include "sim/workload/trace_reader.h"

namespace kvtier::hw::testing {

using kvtier::testing::make_tier;

// 4-token blocks of 1,000 bytes per token: 4,000-byte pages, not a multiple of 4 KiB (padded host pages).
inline constexpr int64_t kBytesPerToken = 1000;
inline constexpr uint64_t kPageBytes = 4 * kBytesPerToken;

struct TierConfig {
  std::string name;
  std::vector<TierSpec> tiers;
};

// A tier on `medium` in `layout`, named after it.
inline TierSpec tier(Medium medium, int64_t blocks, const KvLayout& layout) {
  TierSpec spec = single_tier(layout, kvtier::testing::kBlockTokens, 0, PolicyKind::kLru);
  spec.name = std::string(medium_name(medium));
  spec.capacity_bytes = blocks * spec.bytes_per_block();
  spec.medium = medium;
  return spec;
}

inline TierSpec tier(Medium medium, int64_t blocks, int64_t bytes_per_token = kBytesPerToken) {
  return tier(medium, blocks, kvtier::testing::flat_layout(bytes_per_token));
}

// HBM's layout and the one of the tiers below it.
struct TierLayouts {
  KvLayout hbm, lower;
};

// A small model whose pages pack into int4: 3 layers of one KV head of 128 values. bf16 takes
// 3 x 2 x 128 x 2 = 1,536 bytes per token, 6,144 per 4-token block; int4 (group 32: 64 bytes of values and
// 4 x 4 of scales and zeros per vector) 3 x 2 x 80 = 480 per token, 1,920 per block.
inline ModelCard int4_test_model() {
  ModelCard model;
  model.name = "int4-test";
  model.layers = 3;
  model.kv_heads = 1;
  model.head_dim = 128;
  return model;
}
inline constexpr uint64_t kInt4TestPageBytes = 6144;
inline constexpr uint64_t kInt4TestPackedBytes = 1920;

// bf16 HBM over int4 (`lower`: a kv preset) DRAM and NVMe, in int4_test_model().
inline TierLayouts int4_layouts(const std::string& lower = "int4") {
  const ModelCard model = int4_test_model();
  return {build_layout(model, *kv_preset("bf16"), "bf16"), build_layout(model, *kv_preset(lower), lower)};
}

// HBM, DRAM and NVMe small enough that every request evicts, under the tier rules that change which
// copies happen: inclusive and exclusive placement, write-through, admission filters, prefix-aware
// eviction, promotion without keeping the block, other policies, two tiers (DRAM or NVMe below HBM).
inline std::vector<TierConfig> tier_configs(int64_t hbm, int64_t dram, int64_t nvme, const TierLayouts& layouts) {
  const auto three = [&] {
    return std::vector<TierSpec>{tier(Medium::kHbm, hbm, layouts.hbm), tier(Medium::kDram, dram, layouts.lower),
                                 tier(Medium::kNvme, nvme, layouts.lower)};
  };
  std::vector<TierConfig> configs;
  configs.push_back({"inclusive_lru", three()});
  auto exclusive = three();
  exclusive[1].placement = exclusive[2].placement = Placement::kExclusive;
  configs.push_back({"exclusive", exclusive});
  auto filtered = three();  // the NVMe seed: exclusive DRAM, NVMe only for blocks seen twice
  filtered[1].placement = Placement::kExclusive;
  filtered[2].admit_after = 2;
  configs.push_back({"nvme_admit_after_2", filtered});
  auto through = three();
  through[1].write = WriteMode::kThrough;
  configs.push_back({"dram_write_through", through});
  auto all_through = three();
  all_through[1].write = all_through[2].write = WriteMode::kThrough;
  configs.push_back({"all_write_through", all_through});
  auto prefix_aware = three();
  for (TierSpec& t : prefix_aware) t.prefix_aware = true;
  prefix_aware[0].policy = PolicyKind::kArc;
  prefix_aware[1].policy = PolicyKind::kS3Fifo;
  prefix_aware[2].policy = PolicyKind::kLfu;
  configs.push_back({"prefix_aware_mixed_policies", prefix_aware});
  auto transient = three();
  transient[1].promote_on_hit = false;
  configs.push_back({"dram_no_promote_on_hit", transient});
  configs.push_back({"hbm_dram", {tier(Medium::kHbm, hbm, layouts.hbm), tier(Medium::kDram, dram, layouts.lower)}});
  configs.push_back({"hbm_nvme", {tier(Medium::kHbm, hbm, layouts.hbm), tier(Medium::kNvme, nvme, layouts.lower)}});
  return configs;
}

inline std::vector<TierConfig> tier_configs(int64_t hbm, int64_t dram, int64_t nvme,
                                            int64_t bytes_per_token = kBytesPerToken) {
  const KvLayout flat = kvtier::testing::flat_layout(bytes_per_token);
  return tier_configs(hbm, dram, nvme, TierLayouts{flat, flat});
}

// A fresh directory for the NVMe store's file under the system temp directory.
class ScratchDirectory {
 public:
  explicit ScratchDirectory(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("kvtier-tiered-" + std::to_string(::getpid()) + "-" + name)) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchDirectory() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// O_DIRECT where the file system allows it, else buffered I/O (tmpfs).
inline std::unique_ptr<NvmeStore> open_nvme(const std::string& path, const NvmeStoreOptions& options) {
  try {
    return NvmeStore::create(path, options, IoMode::kDirect);
  } catch (const StoreError&) {
    std::filesystem::remove(path);
    return NvmeStore::create(path, options, IoMode::kBuffered);
  }
}

// Spare HBM pages and NVMe slots beyond the tiers' capacities, and spare DRAM pages: room for batching.
inline constexpr int64_t kSpare = 8;

// An NVMe store for the tiers' NVMe tier, or none when they have none.
inline std::unique_ptr<NvmeStore> nvme_for(const std::vector<TierSpec>& tiers, const ScratchDirectory& dir,
                                           uint64_t page_bytes) {
  auto nvme = std::find_if(tiers.begin(), tiers.end(), [](const TierSpec& t) { return t.medium == Medium::kNvme; });
  if (nvme == tiers.end()) return nullptr;
  return open_nvme(dir.file("nvme.store"),
                   {.block_bytes = page_bytes,
                    .capacity_blocks = static_cast<uint64_t>(nvme->capacity_blocks() + kSpare)});
}

inline constexpr TieredStoreOptions kTestOptions{.staging_pages = 4, .spare_dram_pages = kSpare};

// The first `count` requests of the Mooncake sample in traces/; empty when it cannot be read.
inline std::vector<Request> mooncake_slice(int64_t count) {
  const std::string path = "traces/mooncake-conversation-first2000.jsonl";
  std::vector<Request> requests;
  if (!std::filesystem::exists(path)) return requests;
  auto stream = open_trace(path, TraceReadOptions{});
  Request request;
  while (static_cast<int64_t>(requests.size()) < count && stream->next(request)) requests.push_back(request);
  return requests;
}

// The pattern a store's pages can carry unchanged through its tiers.
inline PatternKind pattern_for(const TieredStore& store) {
  return store.packing() ? PatternKind::kInt4Exact : PatternKind::kBytes;
}

// Every block the store holds, anywhere, reads back with exactly its pattern. Returns false on the first
// that does not.
template <typename Blocks>
bool expect_every_resident_block_intact(TieredStore& store, const Blocks& known_blocks) {
  std::vector<std::byte> buffer(store.page_bytes());
  for (uint64_t block : known_blocks) {
    if (store.resident_tier(block) < 0) continue;
    const bool intact = store.read_block(block, buffer) && has_block_pattern(block, buffer, pattern_for(store));
    EXPECT_TRUE(intact) << "block " << block << " in tier " << store.resident_tier(block)
                        << " lost its bytes";
    if (!intact) return false;
  }
  return true;
}

struct ReplayTotals {
  int64_t requests = 0;
  std::vector<int64_t> hits_by_tier;
};

// Replays `requests` through the store and through a plain TieredCache of the same tiers, admit and
// release one request at a time (the fast hit-rate mode's rule: a request longer than HBM keeps its
// first capacity-many blocks). After every admit: every block of the request reads back from its HBM
// page with exactly its pattern (placed blocks get theirs written first, as prefill would), and the
// hits per tier equal the plain cache's. Every `full_check_every` requests, every block the store holds
// anywhere is read back too.
inline ReplayTotals replay_and_check(TieredStore& store, DevicePages& device,
                                     const std::vector<TierSpec>& tiers, const std::vector<Request>& requests,
                                     int full_check_every = 10) {
  TieredCache reference(tiers);
  DevicePatterns patterns(device, 64, pattern_for(store));
  ReplayTotals totals{.hits_by_tier = std::vector<int64_t>(tiers.size(), 0)};
  std::set<uint64_t> known;
  Admission expected;
  for (const Request& request : requests) {
    const size_t fits =
        std::min<size_t>(request.block_ids.size(), static_cast<size_t>(tiers[0].capacity_blocks()));
    const std::span<const uint64_t> chain = std::span<const uint64_t>(request.block_ids).first(fits);
    known.insert(chain.begin(), chain.end());
    StoreAdmission admission = store.admit(chain);
    EXPECT_EQ(admission.admitted, reference.admit(chain, expected));
    if (!admission.admitted) continue;
    const bool same_hits = admission.hits_by_tier == expected.prefix.hit_blocks_by_tier;
    EXPECT_TRUE(same_hits) << "request " << totals.requests
                           << ": hits per tier differ from the cache model's";

    const std::vector<uint64_t> wrong = fill_placed_and_check(patterns, admission, chain);
    EXPECT_TRUE(wrong.empty()) << "request " << totals.requests << ": " << wrong.size() << " of "
                               << chain.size() << " blocks do not read back from HBM, the first is "
                               << wrong.front();
    for (size_t t = 0; t < tiers.size(); ++t) totals.hits_by_tier[t] += admission.hits_by_tier[t];
    store.release(admission);
    reference.release(expected);
    ++totals.requests;
    if (!same_hits || !wrong.empty()) break;  // one broken request explains the rest
    if (totals.requests % full_check_every == 0 && !expect_every_resident_block_intact(store, known)) break;
  }
  expect_every_resident_block_intact(store, known);
  return totals;
}

inline int64_t flow_blocks(const TieredStore& store, CacheEventKind kind, int from, int to) {
  return store.cache().traffic().flow(kind, from, to).blocks;
}

}  // namespace kvtier::hw::testing
