// kvtier-hw breakeven's sweep lengths and its choreography of the tiered store, on host memory: the miss
// prefills every token over placed pages, the hit finds the whole prefix in the lower tier only and
// promotes it (the copies the probe times), and a repeat leaves HBM empty.
#include "hw/tools/breakeven_probe.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "hw/store/host_memory_pages.h"
#include "sim/cache/cache_test_support.h"
#include "sim/core/config.h"
#include "sim/core/config_files.h"

namespace kvtier::hw {
namespace {

using kvtier::testing::kBlockTokens;  // 4 tokens
using kvtier::testing::make_tier;

// 1K:64K:1.25 in 256-token blocks, each the largest multiple of 256 at most 1.25 times the one before:
// 1024 -> 1280 -> floor(1600/256) = 6 blocks 1536 -> floor(1920/256) = 7: 1792 -> 2240: 2048 -> 2560 -> 3200:
// 3072 -> 3840 -> 4800: 4608 -> 5760: 5632 -> 7040: 6912 -> 8640: 8448 -> 10560: 10496 -> 13120: 13056 ->
// 16320: 16128 -> 20160: 19968 -> 24960: 24832 -> 31040: 30976 -> 38720: 38656 -> 48320: 48128 ->
// 60160 (235 blocks exactly) -> (75200 is past 64K) 65536.
TEST(SweepLengths, GeometricInWholeBlocksNeverMoreThanTheRatioApart) {
  const std::vector<int64_t> expected{1024,  1280,  1536,  1792,  2048,  2560,  3072,  3840,
                                      4608,  5632,  6912,  8448,  10496, 13056, 16128, 19968,
                                      24832, 30976, 38656, 48128, 60160, 65536};
  EXPECT_EQ(parse_sweep("1K:64K:1.25", 256), expected);
  for (size_t i = 1; i < expected.size(); ++i) EXPECT_LE(expected[i], 1.25 * expected[i - 1]);
}

TEST(SweepLengths, RoundsTheEndsToWholeBlocksAndAlwaysGrows) {
  EXPECT_EQ(sweep_lengths(1000, 2100, 1.01, 256), (std::vector<int64_t>{1024, 1280, 1536, 1792, 2048}));
  EXPECT_EQ(parse_contexts("32K,1000,4K,4096", 256), (std::vector<int64_t>{768, 4096, 32768}));
}

TEST(SweepLengths, RefusesWhatIsNotASweep) {
  EXPECT_THROW(parse_sweep("1K:64K", 256), ConfigError);
  EXPECT_THROW(parse_sweep("1K:64K:1", 256), ConfigError);
  EXPECT_THROW(parse_sweep("64K:1K:1.25", 256), ConfigError);
  EXPECT_THROW(parse_sweep("1K:64X:1.25", 256), ConfigError);
  EXPECT_THROW(parse_contexts("100", 256), ConfigError);
  EXPECT_THROW(parse_contexts("-4K", 256), ConfigError);
}

// A prefill that takes a fixed time and remembers what it was asked to compute.
class FakePrefill : public Prefill {
 public:
  struct Call {
    int64_t cached, fresh;
    size_t pages;
  };
  double run(int64_t cached_tokens, int64_t new_tokens, std::span<const int64_t> pages) override {
    calls.push_back({cached_tokens, new_tokens, pages.size()});
    return cached_tokens == 0 ? 2.0 : 0.25;
  }
  std::vector<Call> calls;
};

constexpr int64_t kBytesPerToken = 1000;  // 4,000-byte pages
constexpr int64_t kPrefixTokens = 12;     // 3 blocks
constexpr int64_t kNewTokens = 6;         // 2 blocks, the last partial

struct TwoTiers {
  explicit TwoTiers(Medium lower) : device(16, kBlockTokens * kBytesPerToken) {
    TierSpec hbm = make_tier("hbm", 5, PolicyKind::kLru, kBytesPerToken);
    TierSpec below = make_tier(std::string(medium_name(lower)), 10, PolicyKind::kLru, kBytesPerToken);
    below.medium = lower;
    std::unique_ptr<NvmeStore> nvme;
    if (lower == Medium::kNvme) {
      nvme = NvmeStore::create(file, {.block_bytes = device.page_bytes(), .capacity_blocks = 16},
                               IoMode::kBuffered);
    }
    store = std::make_unique<TieredStore>(std::vector<TierSpec>{hbm, below}, device, std::move(nvme),
                                          TieredStoreOptions{.staging_pages = 4, .spare_dram_pages = 4});
  }
  std::string file = (std::filesystem::temp_directory_path() /
                      ("kvtier-breakeven-probe-" + std::to_string(::getpid()) + ".store"))
                         .string();
  HostMemoryPages device;
  std::unique_ptr<TieredStore> store;
};

TEST(BreakevenProbe, MissPrefillsEverythingHitLoadsThePrefixFromTheLowerTier) {
  for (Medium lower : {Medium::kDram, Medium::kNvme}) {
    TwoTiers tiers(lower);
    FakePrefill prefill;
    BreakevenProbe probe(*tiers.store, prefill, kBlockTokens, kNewTokens);
    const BreakevenSample first = probe.measure(kPrefixTokens);
    const BreakevenSample second = probe.measure(kPrefixTokens);

    ASSERT_EQ(prefill.calls.size(), 4u);
    EXPECT_EQ(prefill.calls[0].cached, 0);
    EXPECT_EQ(prefill.calls[0].fresh, 18);
    EXPECT_EQ(prefill.calls[0].pages, 5u);
    EXPECT_EQ(prefill.calls[1].cached, 12);
    EXPECT_EQ(prefill.calls[1].fresh, 6);
    EXPECT_EQ(prefill.calls[1].pages, 5u);
    for (const BreakevenSample& s : {first, second}) {
      EXPECT_EQ(s.miss_s, 2.0);
      EXPECT_GT(s.load_s, 0);
      EXPECT_DOUBLE_EQ(s.hit_s, s.load_s + 0.25);
    }
    // Two hits of 3 blocks each reached HBM from below: 6 promotions, none of them cached in HBM before.
    const TrafficTotals::Flow& promoted = tiers.store->cache().traffic().flow(CacheEventKind::kPromote, 1, 0);
    EXPECT_EQ(promoted.blocks, 6) << medium_name(lower);
    EXPECT_EQ(tiers.store->cache().used_blocks(0), 0) << "HBM is left empty";
  }
}

// HBM in Llama-3.1-8B's bf16 (4-token pages of 512 KiB), DRAM in int4: the prefix reaches DRAM quantized
// (40,960 B per token: 160 KiB per block) and comes back through the int4 path.
TEST(BreakevenProbe, AnInt4LowerTierServesTheHitInItsPackedBytes) {
  const ModelCard llama = parse_model_card(load_config("llama-3.1-8b", "models"));
  TierSpec hbm = single_tier(resolve_kv_layout(llama, "bf16"), kBlockTokens, 0, PolicyKind::kLru);
  hbm.name = "hbm";
  hbm.capacity_bytes = 5 * hbm.bytes_per_block();
  TierSpec dram = single_tier(resolve_kv_layout(llama, "int4"), kBlockTokens, 0, PolicyKind::kLru);
  dram.name = "dram";
  dram.medium = Medium::kDram;
  dram.capacity_bytes = 10 * dram.bytes_per_block();
  HostMemoryPages device(16, static_cast<uint64_t>(hbm.bytes_per_block()));
  TieredStore store({hbm, dram}, device, nullptr,
                    TieredStoreOptions{.staging_pages = 4, .spare_dram_pages = 4});
  FakePrefill prefill;
  BreakevenProbe probe(store, prefill, kBlockTokens, kNewTokens);
  const BreakevenSample sample = probe.measure(kPrefixTokens);
  EXPECT_EQ(sample.miss_s, 2.0);
  const TrafficTotals::Flow& promoted = store.cache().traffic().flow(CacheEventKind::kPromote, 1, 0);
  EXPECT_EQ(promoted.blocks, 3);
  EXPECT_EQ(promoted.from_bytes, 3 * 4 * 40960);
}

TEST(BreakevenProbe, MediansOfEachTimeApart) {
  const BreakevenSample m = median_sample({{3, 9, 1}, {1, 7, 5}, {2, 8, 3}});
  EXPECT_EQ(m.load_s, 2);
  EXPECT_EQ(m.hit_s, 8);
  EXPECT_EQ(m.miss_s, 3);
  EXPECT_EQ(median_sample({{1, 1, 1}, {2, 4, 8}}).miss_s, 4.5);
}

}  // namespace
}  // namespace kvtier::hw
