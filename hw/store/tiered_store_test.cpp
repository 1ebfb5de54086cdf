// TieredStore on the CPU reference (HostMemoryPages) with a real NVMe store in a temp directory: data
// integrity through the tiers and hit counts equal to the plain cache model's, request by request.
#include "hw/store/tiered_store.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include "sim/core/config_files.h"
#include "hw/kernels/int4_group.h"
#include "hw/store/host_memory_pages.h"
#include "hw/store/page_packing.h"
#include "hw/store/tiered_store_test_support.h"

namespace kvtier::hw {
namespace {

using namespace testing;

class TieredStoreConfigTest : public ::testing::TestWithParam<TierConfig> {};

TEST_P(TieredStoreConfigTest, EveryBlockReadsBackAndHitsMatchTheCacheModel) {
  const TierConfig& config = GetParam();
  ScratchDirectory dir(config.name);
  HostMemoryPages device(config.tiers[0].capacity_blocks() + kSpare, kPageBytes);
  TieredStore store(config.tiers, device, nvme_for(config.tiers, dir, kPageBytes), kTestOptions);
  const auto requests = kvtier::testing::random_requests(400, 8, 9, 17);
  const ReplayTotals totals = replay_and_check(store, device, config.tiers, requests);
  EXPECT_EQ(totals.requests, 400);
  EXPECT_GT(totals.hits_by_tier[1], 0) << "no hit came from tier 1: the capacities are too large to test much";
  const int last = static_cast<int>(config.tiers.size()) - 1;
  EXPECT_GT(flow_blocks(store, CacheEventKind::kDrop, last, -1), 0) << "nothing left the hierarchy";
}

INSTANTIATE_TEST_SUITE_P(Configs, TieredStoreConfigTest, ::testing::ValuesIn(tier_configs(10, 14, 20)),
                         [](const auto& info) { return info.param.name; });

// The same hierarchies with bf16 in HBM and int4 below it: pages are quantized on the way down and
// dequantized on the way up (the int4-exact pattern survives that), and every copy moves the packed bytes.
class TieredStoreInt4Test : public ::testing::TestWithParam<TierConfig> {};

TEST_P(TieredStoreInt4Test, EveryBlockReadsBackAndEveryCopyMovesPackedPages) {
  const TierConfig& config = GetParam();
  ScratchDirectory dir("int4-" + config.name);
  HostMemoryPages device(config.tiers[0].capacity_blocks() + kSpare, kInt4TestPageBytes);
  TieredStore store(config.tiers, device, nvme_for(config.tiers, dir, kInt4TestPackedBytes), kTestOptions);
  ASSERT_TRUE(store.packing());
  EXPECT_EQ(store.stored_page_bytes(0), kInt4TestPageBytes);
  EXPECT_EQ(store.stored_page_bytes(1), kInt4TestPackedBytes);
  const ReplayTotals totals = replay_and_check(store, device, config.tiers, kvtier::testing::random_requests(400, 8, 9, 17));
  EXPECT_EQ(totals.requests, 400);
  EXPECT_GT(totals.hits_by_tier[1], 0);
  for (const PathTotals& path : store.transfers()) EXPECT_EQ(path.bytes, path.blocks * kInt4TestPackedBytes);
}

INSTANTIATE_TEST_SUITE_P(Configs, TieredStoreInt4Test,
                         ::testing::ValuesIn(tier_configs(10, 14, 20, int4_layouts())),
                         [](const auto& info) { return info.param.name; });

// bf16 values that int4 does not hold exactly, the page's elements in order: the lower tier holds exactly
// the reference's records, and HBM gets back exactly their dequantized values.
std::vector<uint16_t> rough_page(uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> value(0.0f, 3.0f);
  std::vector<uint16_t> page(kInt4TestPageBytes / 2);
  for (uint16_t& x : page) x = float_to_bf16(value(rng));
  return page;
}

std::span<std::byte> bytes_of(std::vector<uint16_t>& values) { return std::as_writable_bytes(std::span(values)); }

TEST(TieredStoreInt4, LowerTiersHoldTheReferenceRecordsAndHbmTheirValues) {
  for (const std::string preset : {"int4", "int4-g128"}) {
    SCOPED_TRACE(preset);
    const TierLayouts layouts = int4_layouts(preset);
    const std::vector<TierSpec> tiers{tier(Medium::kHbm, 2, layouts.hbm), tier(Medium::kDram, 1, layouts.lower),
                                      tier(Medium::kNvme, 4, layouts.lower)};
    const Int4GroupParams params{128, preset == "int4" ? 32 : 128};
    const uint64_t packed_bytes = 24 * static_cast<uint64_t>(params.record_bytes());  // 24 rows of 128 values
    ASSERT_EQ(tiers[1].bytes_per_block(), static_cast<int64_t>(packed_bytes));
    ScratchDirectory dir("int4-records-" + preset);
    HostMemoryPages device(2, kInt4TestPageBytes);
    TieredStore store(tiers, device, nvme_for(tiers, dir, packed_bytes), {.staging_pages = 2, .spare_dram_pages = 0});

    std::vector<uint16_t> page = rough_page(7);
    std::vector<uint8_t> records(packed_bytes);
    int4_group_quantize_reference(params, page, records);
    std::vector<uint16_t> values(page.size());
    int4_group_dequantize_reference(params, records, values);
    ASSERT_NE(values, page) << "the page should not survive int4 unchanged";

    StoreAdmission a = store.admit(std::vector<uint64_t>{1});
    std::byte* host = bytes_of(page).data();
    device.reload(std::span<const int64_t>(a.hbm_pages), {&host, 1});
    store.release(a);
    for (uint64_t other : {2, 3}) {  // push block 1 to DRAM, then to NVMe
      StoreAdmission b = store.admit(std::vector<uint64_t>{other, other + 10});
      store.release(b);
      std::vector<std::byte> stored(kInt4TestPageBytes);
      const int held = store.resident_tier(1);
      ASSERT_GE(held, 1);
      ASSERT_TRUE(store.read_stored_block(1, stored));
      EXPECT_EQ(std::memcmp(stored.data(), records.data(), packed_bytes), 0) << "in tier " << held;
    }
    ASSERT_EQ(store.resident_tier(1), 2);
    StoreAdmission back = store.admit(std::vector<uint64_t>{1});
    EXPECT_EQ(back.source_tier[0], 2);
    std::vector<uint16_t> in_hbm(page.size());
    host = bytes_of(in_hbm).data();
    device.offload(std::span<const int64_t>(back.hbm_pages), {&host, 1});
    EXPECT_EQ(in_hbm, values);
    store.release(back);
    const TransferTotals& moved = store.transfers();
    EXPECT_EQ(moved[static_cast<size_t>(TransferPath::kOffload)].bytes,
              moved[static_cast<size_t>(TransferPath::kOffload)].blocks * packed_bytes);
    EXPECT_EQ(moved[static_cast<size_t>(TransferPath::kNvmeGet)].bytes, packed_bytes);
  }
}

// The basic three-tier hierarchy exercises every path: demotions to NVMe, promotions from both tiers,
// drops, and more than one copy per batch.
TEST(TieredStore, InclusiveHierarchyMovesBlocksAlongEveryPath) {
  const std::vector<TierSpec> tiers = tier_configs(10, 14, 20)[0].tiers;
  ScratchDirectory dir("paths");
  HostMemoryPages device(10 + kSpare, kPageBytes);
  TieredStore store(tiers, device, nvme_for(tiers, dir, kPageBytes), kTestOptions);
  const ReplayTotals totals =
      replay_and_check(store, device, tiers, kvtier::testing::random_requests(400, 8, 9, 17));
  EXPECT_GT(totals.hits_by_tier[2], 0);
  EXPECT_GT(flow_blocks(store, CacheEventKind::kDemote, 0, 1), 0);
  EXPECT_GT(flow_blocks(store, CacheEventKind::kDemote, 1, 2), 0);
  EXPECT_GT(flow_blocks(store, CacheEventKind::kPromote, 1, 0), 0);
  EXPECT_GT(flow_blocks(store, CacheEventKind::kPromote, 2, 0), 0);
  EXPECT_GT(flow_blocks(store, CacheEventKind::kDrop, 2, -1), 0);
  const TransferTotals& moved = store.transfers();
  EXPECT_EQ(moved[static_cast<size_t>(TransferPath::kNvmePut)].blocks,
            flow_blocks(store, CacheEventKind::kDemote, 1, 2));
  EXPECT_EQ(moved[static_cast<size_t>(TransferPath::kNvmeGet)].blocks,
            flow_blocks(store, CacheEventKind::kPromote, 2, 0));
  int64_t copies = 0;
  for (const PathTotals& path : moved) copies += path.blocks;
  EXPECT_LT(store.batches() * 2, copies) << "copies should travel in batches, not one by one";
}

// The shared Mooncake sample's reuse distances are long: hits from DRAM need most of its 2,000 requests.
TEST(TieredStore, MooncakeSampleReadsBackAndMatchesTheCacheModel) {
  const std::vector<Request> requests = mooncake_slice(2000);
  if (requests.empty()) FAIL() << "traces/mooncake-conversation-first2000.jsonl is missing from the source root";
  const auto configs = tier_configs(48, 512, 1536);
  for (const TierConfig& config : {configs[1], configs[3]}) {  // exclusive, DRAM written through
    SCOPED_TRACE(config.name);
    ScratchDirectory dir("mooncake-" + config.name);
    HostMemoryPages device(48 + kSpare, kPageBytes);
    TieredStore store(config.tiers, device, nvme_for(config.tiers, dir, kPageBytes), kTestOptions);
    const ReplayTotals totals = replay_and_check(store, device, config.tiers, requests, 200);
    EXPECT_EQ(totals.requests, 2000);
    std::cout << config.name << ": hits HBM " << totals.hits_by_tier[0] << ", DRAM " << totals.hits_by_tier[1]
              << ", NVMe " << totals.hits_by_tier[2] << "\n";
    EXPECT_GT(totals.hits_by_tier[1], 0);
    EXPECT_GT(totals.hits_by_tier[2], 0);
  }
}

// A request as long as HBM after HBM filled with other blocks: every old block is offloaded in one
// batched call, not one call per page.
TEST(TieredStore, EvictionsOfOneAdmitTravelInOneBatch) {
  class CountingPages : public HostMemoryPages {
   public:
    using HostMemoryPages::HostMemoryPages;
    void offload(std::span<const int64_t> pages, std::span<std::byte* const> hosts) override {
      ++offload_calls;
      HostMemoryPages::offload(pages, hosts);
    }
    int offload_calls = 0;
  };
  const std::vector<TierSpec> tiers{tier(Medium::kHbm, 16), tier(Medium::kDram, 32)};
  CountingPages device(16, kPageBytes);
  TieredStore store(tiers, device, nullptr);
  std::vector<uint64_t> first, second;
  for (uint64_t i = 0; i < 16; ++i) {
    first.push_back(100 + i);
    second.push_back(200 + i);
  }
  StoreAdmission a = store.admit(first);
  store.release(a);
  StoreAdmission b = store.admit(second);
  EXPECT_EQ(flow_blocks(store, CacheEventKind::kDemote, 0, 1), 16);
  EXPECT_EQ(device.offload_calls, 1);
  store.release(b);
}

TEST(TieredStore, RejectsTiersItCannotBack) {
  HostMemoryPages device(8, kPageBytes);
  // A 4-bit DRAM tier would need quantization on offload, which the store does not do.
  EXPECT_THROW(TieredStore({tier(Medium::kHbm, 8), tier(Medium::kDram, 8, kBytesPerToken / 4)}, device, nullptr),
               StoreError);
  // int4 below bf16 is packed, other pairings are not: DRAM and NVMe in different layouts, fp8 or
  // turboquant4 below HBM, and a different int4 below int4 HBM.
  const TierLayouts int4 = int4_layouts();
  const ModelCard model = int4_test_model();
  HostMemoryPages bf16_pages(8, kInt4TestPageBytes);
  ScratchDirectory dir("rejects");
  const std::vector<TierSpec> mixed{tier(Medium::kHbm, 8, int4.hbm), tier(Medium::kDram, 8, int4.lower),
                                    tier(Medium::kNvme, 8, int4.hbm)};
  EXPECT_THROW(TieredStore(mixed, bf16_pages, nvme_for(mixed, dir, kInt4TestPageBytes)), StoreError);
  for (const std::string preset : {"fp8", "turboquant4-all"}) {
    const KvLayout lower = build_layout(model, *kv_preset(preset), preset);
    EXPECT_THROW(TieredStore({tier(Medium::kHbm, 8, int4.hbm), tier(Medium::kDram, 8, lower)}, bf16_pages, nullptr),
                 StoreError)
        << preset;
  }
  HostMemoryPages int4_pages(8, kInt4TestPackedBytes);
  const KvLayout g128 = build_layout(model, *kv_preset("int4-g128"), "int4-g128");
  EXPECT_THROW(TieredStore({tier(Medium::kHbm, 8, int4.lower), tier(Medium::kDram, 8, g128)}, int4_pages, nullptr),
               StoreError);
  EXPECT_THROW(TieredStore({tier(Medium::kHbm, 9)}, device, nullptr), StoreError);  // more blocks than pages
  EXPECT_THROW(TieredStore({tier(Medium::kHbm, 8), tier(Medium::kDram, 8), tier(Medium::kNvme, 8)}, device, nullptr), StoreError);
}

// The store finds each tier by its medium, not its place: NVMe right below HBM stages through host pages,
// and every hit still matches the cache model. What it cannot back is refused.
TEST(TieredStore, TiersAreFoundByTheirMedia) {
  const std::vector<TierSpec> tiers{tier(Medium::kHbm, 10), tier(Medium::kNvme, 20)};
  ScratchDirectory dir("media");
  HostMemoryPages device(10 + kSpare, kPageBytes);
  TieredStore store(tiers, device, nvme_for(tiers, dir, kPageBytes), kTestOptions);
  const ReplayTotals totals =
      replay_and_check(store, device, tiers, kvtier::testing::random_requests(400, 8, 9, 17));
  EXPECT_GT(totals.hits_by_tier[1], 0);
  EXPECT_EQ(store.transfers()[static_cast<size_t>(TransferPath::kNvmeGet)].blocks,
            flow_blocks(store, CacheEventKind::kPromote, 1, 0));

  HostMemoryPages small(8, kPageBytes);
  EXPECT_THROW(TieredStore({tier(Medium::kHbm, 8), tier(Medium::kRemote, 8)}, small, nullptr), StoreError);
  EXPECT_THROW(TieredStore({tier(Medium::kDram, 8)}, small, nullptr), StoreError);
  ScratchDirectory order("order");
  const std::vector<TierSpec> nvme_above_dram{tier(Medium::kHbm, 8), tier(Medium::kNvme, 8), tier(Medium::kDram, 8)};
  EXPECT_THROW(TieredStore(nvme_above_dram, small, nvme_for(nvme_above_dram, order, kPageBytes)), StoreError);
}

std::string tier_file(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

std::string load_error(const std::string& path) {
  try {
    load_store_tiers(path, parse_model_card(load_config("llama-3.1-8b", "models")), 16);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "no error";
}

// int4 below bf16 HBM, as validation scenario (c) runs it: Llama-3.1-8B's 131,072 bf16 bytes per token
// pack into 128 x 2 x 8 x 32 x (64 + 16) / 128 = 40,960.
TEST(LoadStoreTiers, AcceptsInt4BelowBf16) {
  const std::string path = tier_file("kvtier-store-int4.yaml",
                                     "tiers:\n  - {medium: hbm, capacity_blocks: 8, kv: bf16}\n"
                                     "  - {medium: dram, capacity_blocks: 8, kv: int4}\n"
                                     "  - {medium: nvme, capacity_blocks: 8, kv: int4}\n");
  const std::vector<TierSpec> tiers =
      load_store_tiers(path, parse_model_card(load_config("llama-3.1-8b", "models")), 16);
  ASSERT_EQ(tiers.size(), 3u);
  EXPECT_EQ(tiers[0].bytes_per_block(), 16 * 131072);
  EXPECT_EQ(tiers[1].bytes_per_block(), 16 * 40960);
  EXPECT_EQ(tiers[2].bytes_per_block(), 16 * 40960);
}

// kvtier-hw replay's tiers come from a tier file, as `kvtier hitrate --tiers` reads it.
TEST(LoadStoreTiers, ReadsATierFileWithItsMedia) {
  const std::vector<TierSpec> tiers =
      load_store_tiers("replay-small", parse_model_card(load_config("llama-3.1-8b", "models")), 16);
  ASSERT_EQ(tiers.size(), 3u);
  EXPECT_EQ(tiers[0].medium, Medium::kHbm);
  EXPECT_EQ(tiers[1].medium, Medium::kDram);
  EXPECT_EQ(tiers[2].medium, Medium::kNvme);
  EXPECT_EQ(tiers[0].capacity_blocks(), 64);
  EXPECT_EQ(tiers[1].capacity_blocks(), 128);
  EXPECT_EQ(tiers[2].capacity_blocks(), 256);
  EXPECT_EQ(tiers[2].bytes_per_block(), 16 * 131072);  // Llama-3.1-8B bf16: 131,072 B per token
}

TEST(LoadStoreTiers, RefusesWhatTheStoreCannotBackAtTheKey) {
  const std::string remote = tier_file("kvtier-store-remote.yaml",
                                       "tiers:\n  - {medium: hbm, capacity_blocks: 8, kv: bf16}\n"
                                       "  - {medium: remote, capacity_blocks: 8, kv: bf16}\n");
  EXPECT_EQ(load_error(remote),
            remote + ":3:14: tiers[1].medium: the hardware mode's store has no remote pool; use dram or nvme");
  const std::string fp8 = tier_file("kvtier-store-fp8.yaml",
                                    "tiers:\n  - {medium: hbm, capacity_blocks: 8, kv: bf16}\n"
                                    "  - {medium: dram, capacity_blocks: 8, kv: fp8}\n");
  EXPECT_EQ(load_error(fp8), fp8 + ":3:44: tiers[1].kv: the store keeps every tier in HBM's layout, or with bf16 "
                                   "in HBM, the tiers below it in one group-scaled int4 layout with fp16 scale and "
                                   "zero point (kv: int4 or int4-g128); got fp8 (int4 kernels implement "
                                   "group-scaled int4 with fp16 scale and zero point; got fp8)");
  const std::string mixed = tier_file("kvtier-store-mixed.yaml",
                                      "tiers:\n  - {medium: hbm, capacity_blocks: 8, kv: bf16}\n"
                                      "  - {medium: dram, capacity_blocks: 8, kv: int4}\n"
                                      "  - {medium: nvme, capacity_blocks: 8, kv: int4-g128}\n");
  EXPECT_EQ(load_error(mixed), mixed + ":4:44: tiers[2].kv: the tiers below HBM move pages between them unchanged, "
                                       "so they need one layout, int4");
  const std::string order = tier_file("kvtier-store-order.yaml",
                                      "tiers:\n  - {medium: hbm, capacity_blocks: 8, kv: bf16}\n"
                                      "  - {medium: nvme, capacity_blocks: 8, kv: bf16}\n"
                                      "  - {medium: dram, capacity_blocks: 8, kv: bf16}\n");
  EXPECT_EQ(load_error(order), order + ":2:3: tiers: expected the store's order: hbm, then dram, then nvme");
}

// An LMCache configuration is a tier file too: what the store cannot back is refused at LMCache's key.
TEST(LoadStoreTiers, ReadsAnLmcacheConfiguration) {
  const std::string lmcache = tier_file("kvtier-store-lmcache.yaml",
                                        "chunk_size: 16\nmax_local_cpu_size: 0.5\n"
                                        "extra_config: {kvtier_hbm: {capacity_blocks: 8, kv: int4}}\n");
  const std::vector<TierSpec> tiers =
      load_store_tiers(lmcache, parse_model_card(load_config("llama-3.1-8b", "models")), 16);
  ASSERT_EQ(tiers.size(), 2u);
  EXPECT_EQ(tiers[1].medium, Medium::kDram);
  EXPECT_EQ(tiers[1].bytes_per_block(), 16 * 40960);  // HBM's int4 layout, unchanged below it
  EXPECT_EQ(tiers[1].capacity_blocks(), 819);         // 2^29 B / 655,360 B = 819.2
  const std::string remote = tier_file("kvtier-store-lmcache-remote.yaml",
                                       "chunk_size: 16\nremote_url: lm://pool:65432\n"
                                       "extra_config: {kvtier_hbm: {capacity_blocks: 8, kv: bf16},"
                                       " kvtier_remote: {capacity: 1TiB}}\n");
  EXPECT_EQ(load_error(remote),
            remote + ":2:13: remote_url: the hardware mode's store has no remote pool; use dram or nvme");
}

// A group of int4 values must divide a record (one head's K or V): int4-g128 packs heads of 128, not 64.
TEST(LowerLayoutProblem, AGroupMustDivideARecord) {
  const ModelCard llama = parse_model_card(load_config("llama-3.1-8b", "models"));
  const KvLayout bf16 = resolve_kv_layout(llama, "bf16"), g128 = resolve_kv_layout(llama, "int4-g128");
  EXPECT_EQ(lower_layout_problem(bf16, g128, 128), "");
  const std::string problem = lower_layout_problem(bf16, g128, 64);
  EXPECT_NE(problem.find("got int4-g128 ("), std::string::npos) << problem;
  EXPECT_NE(problem.find("dividing 64, got 128"), std::string::npos) << problem;
}

// A serving loop shrinks HBM's cache area as decode KV grows: the evicted blocks go down with their bytes,
// and the area grows back. Pinned blocks bound the shrinking.
TEST(TieredStore, ShrinkingHbmDemotesItsBlocksWithTheirBytes) {
  const std::vector<TierSpec> tiers = tier_configs(10, 14, 20)[0].tiers;
  ScratchDirectory dir("capacity");
  HostMemoryPages device(10 + kSpare, kPageBytes);
  TieredStore store(tiers, device, nvme_for(tiers, dir, kPageBytes), kTestOptions);
  DevicePatterns patterns(device, 64);
  const std::vector<uint64_t> chain = {1, 2, 3, 4, 5, 6, 7, 8};
  StoreAdmission admission = store.admit(chain);
  ASSERT_TRUE(admission.admitted);
  EXPECT_TRUE(fill_placed_and_check(patterns, admission, chain).empty());
  const int64_t block_bytes = tiers[0].bytes_per_block();
  EXPECT_FALSE(store.set_hbm_capacity(7 * block_bytes)) << "8 blocks are pinned";
  EXPECT_EQ(store.cache().used_blocks(0), 8);
  store.release(admission);
  ASSERT_TRUE(store.set_hbm_capacity(3 * block_bytes));
  EXPECT_EQ(store.cache().used_blocks(0), 3);
  EXPECT_EQ(flow_blocks(store, CacheEventKind::kDemote, 0, 1), 5);
  EXPECT_EQ(store.transfers()[static_cast<size_t>(TransferPath::kOffload)].blocks, 5);
  int in_dram = 0;
  for (uint64_t block : chain) in_dram += store.resident_tier(block) == 1;
  EXPECT_EQ(in_dram, 5);
  EXPECT_TRUE(expect_every_resident_block_intact(store, chain));
  ASSERT_TRUE(store.set_hbm_capacity(10 * block_bytes));
  StoreAdmission again = store.admit(chain);
  ASSERT_TRUE(again.admitted);
  EXPECT_EQ(again.hits_by_tier[1], 5);
  EXPECT_TRUE(fill_placed_and_check(patterns, again, chain).empty());
  EXPECT_THROW(store.set_hbm_capacity((10 + kSpare + 1) * block_bytes), StoreError);
}

}  // namespace
}  // namespace kvtier::hw
