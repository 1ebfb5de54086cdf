// TieredStore on a real GPU (GpuDevicePages: HbmKvCache + OffloadEngine), with the same integrity and
// hit-count checks as the CPU reference's tests. Skips where no GPU is visible (CI).
#include <gtest/gtest.h>

#include "hw/gpu/check.h"
#include "hw/store/gpu_device_pages.h"
#include "hw/store/tiered_store.h"
#include "hw/store/tiered_store_test_support.h"

namespace kvtier::hw {
namespace {

using namespace testing;

// Two layer groups, a bf16-sized one and a ragged packed one (not a multiple of 16 bytes), so that pages
// go through the group-aware gather/scatter and padded host pages; 24,548 bytes = 4 tokens x 6,137.
const std::vector<int64_t> kGroupBytes = {16384, 8164};
constexpr int64_t kGpuBytesPerToken = 6137;

class TieredStoreGpuTest : public ::testing::TestWithParam<TierConfig> {
 protected:
  void SetUp() override {
    if (gpu::visible_device_count() == 0) GTEST_SKIP() << "no GPU visible: GpuDevicePages needs one";
  }
};

TEST_P(TieredStoreGpuTest, EveryBlockReadsBackFromHbmAndHitsMatchTheCacheModel) {
  const TierConfig& config = GetParam();
  ScratchDirectory dir("gpu-" + config.name);
  GpuDevicePages device(kGroupBytes, config.tiers[0].capacity_blocks() + kSpare);
  ASSERT_EQ(device.page_bytes(), static_cast<uint64_t>(config.tiers[0].bytes_per_block()));
  TieredStore store(config.tiers, device, nvme_for(config.tiers, dir, device.page_bytes()), kTestOptions);
  const ReplayTotals totals =
      replay_and_check(store, device, config.tiers, kvtier::testing::random_requests(400, 8, 9, 17));
  EXPECT_EQ(totals.requests, 400);
  EXPECT_GT(totals.hits_by_tier[1], 0);
}

INSTANTIATE_TEST_SUITE_P(Configs, TieredStoreGpuTest,
                         ::testing::ValuesIn(tier_configs(10, 14, 20, kGpuBytesPerToken)),
                         [](const auto& info) { return info.param.name; });

TEST(TieredStoreGpu, MooncakeSampleReadsBackAndMatchesTheCacheModel) {
  if (gpu::visible_device_count() == 0) GTEST_SKIP() << "no GPU visible: GpuDevicePages needs one";
  const std::vector<Request> requests = mooncake_slice(2000);
  if (requests.empty()) FAIL() << "traces/mooncake-conversation-first2000.jsonl is missing from the source root";
  const std::vector<TierSpec> tiers = tier_configs(48, 512, 1536, kGpuBytesPerToken)[1].tiers;  // exclusive
  ScratchDirectory dir("gpu-mooncake");
  GpuDevicePages device(kGroupBytes, 48 + kSpare);
  TieredStore store(tiers, device, nvme_for(tiers, dir, device.page_bytes()), kTestOptions);
  const ReplayTotals totals = replay_and_check(store, device, tiers, requests, 200);
  EXPECT_EQ(totals.requests, 2000);
  EXPECT_GT(totals.hits_by_tier[1], 0);
  EXPECT_GT(totals.hits_by_tier[2], 0);
}

}  // namespace
}  // namespace kvtier::hw
