// TieredStore on a real GPU (GpuDevicePages: HbmKvCache + OffloadEngine), with the same integrity and
// hit-count checks as the CPU reference's tests, and packed (int4) copies that give the CPU reference's
// bytes. Skips where no GPU is visible (CI).
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>

#include "hw/gpu/check.h"
#include "hw/store/gpu_device_pages.h"
#include "hw/store/host_memory_pages.h"
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

// int4_test_model()'s 6,144-byte bf16 pages in two groups, so that packing runs after the group-aware
// gather and before the scatter: 24 rows of 128 values across the groups' boundary.
const std::vector<int64_t> kInt4GroupBytes = {4096, 2048};

class TieredStoreGpuInt4Test : public TieredStoreGpuTest {};

TEST_P(TieredStoreGpuInt4Test, EveryBlockReadsBackFromHbmAndEveryCopyMovesPackedPages) {
  const TierConfig& config = GetParam();
  ScratchDirectory dir("gpu-int4-" + config.name);
  GpuDevicePages device(kInt4GroupBytes, config.tiers[0].capacity_blocks() + kSpare);
  TieredStore store(config.tiers, device, nvme_for(config.tiers, dir, kInt4TestPackedBytes), kTestOptions);
  const ReplayTotals totals =
      replay_and_check(store, device, config.tiers, kvtier::testing::random_requests(400, 8, 9, 17));
  EXPECT_EQ(totals.requests, 400);
  EXPECT_GT(totals.hits_by_tier[1], 0);
  for (const PathTotals& path : store.transfers()) EXPECT_EQ(path.bytes, path.blocks * kInt4TestPackedBytes);
}

INSTANTIATE_TEST_SUITE_P(Configs, TieredStoreGpuInt4Test,
                         ::testing::ValuesIn(tier_configs(10, 14, 20, int4_layouts())),
                         [](const auto& info) { return info.param.name; });

// Pinned host pages `pitch` apart, the first `count` of them.
struct HostPages {
  HostPages(const DevicePages& device, uint64_t pitch, size_t count)
      : pitch(pitch), memory(device.allocate_host(pitch * count)) {
    std::memset(memory.data(), 0, pitch * count);
  }
  std::byte* at(size_t i) const { return memory.data() + i * pitch; }
  std::vector<std::byte*> list(std::span<const size_t> indices) const {
    std::vector<std::byte*> pages;
    for (size_t i : indices) pages.push_back(at(i));
    return pages;
  }
  uint64_t pitch;
  MemoryRegion memory;
};

// Writes the same bf16 values (a spread that int4 does not hold exactly, with a constant group, a zero
// page row and signed zeros) into every page of both devices.
void fill_rough_pages(DevicePages& gpu, DevicePages& cpu, int64_t pages) {
  HostPages host(gpu, gpu.host_pitch(), static_cast<size_t>(pages));
  std::mt19937 rng(3);
  std::normal_distribution<float> value(0.0f, 4.0f);
  std::vector<int64_t> ids;
  std::vector<std::byte*> hosts;
  for (int64_t p = 0; p < pages; ++p) {
    auto* x = reinterpret_cast<uint16_t*>(host.at(static_cast<size_t>(p)));
    for (uint64_t i = 0; i < gpu.page_bytes() / 2; ++i) x[i] = float_to_bf16(value(rng));
    for (int i = 0; i < 32; ++i) x[i] = float_to_bf16(1.5f);  // a constant group: scale 0
    for (int i = 32; i < 64; ++i) x[i] = static_cast<uint16_t>(i % 2 == 0 ? 0x8000 : 0);
    ids.push_back(p);
    hosts.push_back(host.at(static_cast<size_t>(p)));
  }
  gpu.reload(ids, hosts);
  gpu.synchronize();
  cpu.reload(ids, hosts);
}

// The GPU's packed offload gives the CPU reference's records byte for byte, and its packed reload the
// reference's dequantized pages; pages scattered and in runs (one copy per run), over every page.
TEST(TieredStoreGpu, PackedCopiesGiveTheCpuReferencesBytes) {
  if (gpu::visible_device_count() == 0) GTEST_SKIP() << "no GPU visible: GpuDevicePages needs one";
  constexpr int64_t kPages = 40;
  for (const std::string preset : {"int4", "int4-g128"}) {
    SCOPED_TRACE(preset);
    const TierLayouts layouts = int4_layouts(preset);
    const PagePacking packing = *page_packing(tier(Medium::kHbm, 1, layouts.hbm), tier(Medium::kDram, 1, layouts.lower), 128);
    GpuDevicePages gpu(kInt4GroupBytes, kPages);
    HostMemoryPages cpu(kPages, kInt4TestPageBytes);
    ASSERT_EQ(gpu.page_bytes(), kInt4TestPageBytes);
    fill_rough_pages(gpu, cpu, kPages);

    const uint64_t pitch = round_up_to_io(packing.packed_bytes());
    HostPages from_gpu(gpu, pitch, kPages), from_cpu(gpu, pitch, kPages);
    std::vector<int64_t> ids;
    std::vector<size_t> slots;
    for (int64_t p = 0; p < kPages; ++p) {
      ids.push_back((p * 7) % kPages);                               // every page, out of order
      slots.push_back(static_cast<size_t>(p < 20 ? p : kPages + 19 - p));  // a run, then reversed
    }
    gpu.offload_packed(packing, ids, from_gpu.list(slots));
    gpu.synchronize();
    cpu.offload_packed(packing, ids, from_cpu.list(slots));
    for (size_t i = 0; i < static_cast<size_t>(kPages); ++i)
      ASSERT_EQ(std::memcmp(from_gpu.at(i), from_cpu.at(i), packing.packed_bytes()), 0) << "packed page " << i;

    // Each packed page back into another page: the GPU's dequantized pages equal the reference's.
    std::vector<int64_t> targets;
    for (int64_t p = 0; p < kPages; ++p) targets.push_back((p * 11 + 3) % kPages);
    gpu.reload_packed(packing, targets, from_cpu.list(slots));
    gpu.synchronize();
    cpu.reload_packed(packing, targets, from_cpu.list(slots));
    HostPages gpu_pages(gpu, gpu.host_pitch(), kPages), cpu_pages(gpu, gpu.host_pitch(), kPages);
    std::vector<size_t> all(static_cast<size_t>(kPages));
    std::iota(all.begin(), all.end(), size_t{0});
    std::vector<int64_t> every(all.begin(), all.end());
    gpu.offload(every, gpu_pages.list(all));
    gpu.synchronize();
    cpu.offload(every, cpu_pages.list(all));
    for (size_t i = 0; i < static_cast<size_t>(kPages); ++i)
      ASSERT_EQ(std::memcmp(gpu_pages.at(i), cpu_pages.at(i), kInt4TestPageBytes), 0) << "dequantized page " << i;
  }
}

}  // namespace
}  // namespace kvtier::hw
