// GPU tests of the offload engine; they skip where no GPU is visible (CI).
#include "hw/store/offload_engine.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "hw/store/block_file.h"
#include "hw/gpu/check.h"
#include "hw/store/gpu_memory.h"
#include "hw/store/page_pool.h"
#include "hw/store/store_error.h"

namespace kvtier::hw {
namespace {

class OffloadEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu::visible_device_count() == 0) GTEST_SKIP() << "no GPU visible: the offload engine needs one";
  }
};

// A mixed stack like the AMD seed's: a bf16 boundary group and a packed-uint8 body whose page size is
// not a multiple of 16 or of 4 KiB (ragged edges, padded host pages, 2D copies).
const std::vector<int64_t> kMixedPageBytes = {16384, 6 * 1360 + 2};

// Fills every pool (page bytes and stride padding) with seeded random bytes; returns the host image.
std::vector<std::vector<std::byte>> randomize_pools(const HbmKvCache& cache, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<std::byte>> images;
  for (const PageGroup& group : cache.groups()) {
    std::vector<std::byte> image(static_cast<size_t>(group.pool_pages * group.page_stride));
    for (std::byte& b : image) b = static_cast<std::byte>(rng());
    KVTIER_GPU_CHECK(gpuMemcpy(group.pool, image.data(), image.size(), gpuMemcpyHostToDevice));
    images.push_back(std::move(image));
  }
  return images;
}

// The expected bytes of page `page` as the engine stages it: each group's page bytes in order.
std::vector<std::byte> expected_page(const HbmKvCache& cache,
                                     const std::vector<std::vector<std::byte>>& images, int64_t page) {
  std::vector<std::byte> bytes;
  for (size_t g = 0; g < images.size(); ++g) {
    const PageGroup& group = cache.groups()[g];
    const std::byte* start = images[g].data() + page * group.page_stride;
    bytes.insert(bytes.end(), start, start + group.page_bytes);
  }
  return bytes;
}

TEST_F(OffloadEngineTest, OffloadsScatteredPagesOfAMixedLayoutByteForByteAcrossChunks) {
  HbmKvCache cache(kMixedPageBytes, 64);
  const auto images = randomize_pools(cache, 5);
  const uint64_t pitch = round_up_to_io(static_cast<uint64_t>(cache.staged_page_bytes()));
  PagePool host(allocate_pinned_region(40 * pitch), pitch);
  // Three pages per chunk: 20 pages take 7 chunks through the two staging buffers.
  OffloadEngine engine(
      cache, {.chunk_bytes = 3 * static_cast<uint64_t>(cache.staged_page_bytes()), .host_pitch = pitch});
  std::vector<int64_t> pages;
  for (int64_t p = 63; p >= 0 && pages.size() < 20; p -= 3) pages.push_back(p);
  // Host pages in two runs with a gap, so both the batched and the split copy paths run.
  std::vector<std::byte*> destinations;
  for (uint64_t i = 0; i < pages.size(); ++i) destinations.push_back(host.page(i < 10 ? i : i + 5));
  engine.offload(pages, destinations);
  engine.synchronize();
  for (size_t i = 0; i < pages.size(); ++i) {
    const auto expected = expected_page(cache, images, pages[i]);
    EXPECT_EQ(std::memcmp(destinations[i], expected.data(), expected.size()), 0) << "page " << pages[i];
  }
}

TEST_F(OffloadEngineTest, OffloadAndReloadTogetherMoveEachPageToItsNewHome) {
  HbmKvCache cache(kMixedPageBytes, 48);
  const auto images = randomize_pools(cache, 9);
  const uint64_t pitch = round_up_to_io(static_cast<uint64_t>(cache.staged_page_bytes()));
  PagePool host(allocate_pinned_region(32 * pitch), pitch);
  OffloadEngine engine(cache, {.chunk_bytes = 4 * pitch, .host_pitch = pitch});

  // Pages 0..15 go out to host pages 0..15 while host pages 16..31 (random bytes) come in to 32..47.
  std::vector<int64_t> out_pages, in_pages;
  std::vector<std::byte*> out_host, in_host;
  std::mt19937_64 rng(13);
  for (int64_t i = 0; i < 16; ++i) {
    out_pages.push_back(i);
    out_host.push_back(host.page(i));
    in_pages.push_back(32 + i);
    in_host.push_back(host.page(16 + i));
    for (uint64_t b = 0; b < pitch; ++b) in_host.back()[b] = static_cast<std::byte>(rng());
  }
  engine.offload(out_pages, out_host);
  engine.reload(in_pages, in_host);
  engine.synchronize();

  for (size_t i = 0; i < out_pages.size(); ++i) {
    const auto expected = expected_page(cache, images, out_pages[i]);
    EXPECT_EQ(std::memcmp(out_host[i], expected.data(), expected.size()), 0) << "offloaded page " << i;
  }
  // Read the reloaded pages back with the CPU reference's layout and compare with what was sent.
  int64_t offset = 0;
  for (const PageGroup& group : cache.groups()) {
    for (size_t i = 0; i < in_pages.size(); ++i) {
      std::vector<std::byte> page(static_cast<size_t>(group.page_bytes));
      KVTIER_GPU_CHECK(gpuMemcpy(page.data(), group.pool + in_pages[i] * group.page_stride, page.size(),
                                 gpuMemcpyDeviceToHost));
      EXPECT_EQ(std::memcmp(page.data(), in_host[i] + offset, page.size()), 0) << "reloaded page " << i;
    }
    offset += group.page_bytes;
  }
}

// Fills every page of every pool with bf16 values int4 does not hold exactly; returns the host image.
std::vector<std::vector<std::byte>> fill_bf16_pools(const HbmKvCache& cache, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> value(0.0f, 2.0f);
  std::vector<std::vector<std::byte>> images;
  for (const PageGroup& group : cache.groups()) {
    std::vector<uint16_t> x(static_cast<size_t>(group.pool_pages * group.page_stride / 2));
    for (uint16_t& element : x) element = float_to_bf16(value(rng));
    KVTIER_GPU_CHECK(gpuMemcpy(group.pool, x.data(), x.size() * 2, gpuMemcpyHostToDevice));
    const auto* bytes = reinterpret_cast<const std::byte*>(x.data());
    images.emplace_back(bytes, bytes + x.size() * 2);
  }
  return images;
}

// Packed copies through both staging buffers (three pages a chunk): each offloaded page holds the int4
// reference's records of its staged page, and each reloaded page the reference's dequantized values.
TEST_F(OffloadEngineTest, PackedCopiesAcrossChunksGiveTheReferencesBytes) {
  const std::vector<int64_t> group_bytes = {4096, 2048};  // 24 rows of 128 values across both groups
  HbmKvCache cache(group_bytes, 48);
  const auto images = fill_bf16_pools(cache, 21);
  const PagePacking packing{.params = {128, 32}, .rows = 24};
  ASSERT_EQ(packing.page_bytes(), static_cast<uint64_t>(cache.staged_page_bytes()));
  const uint64_t pitch = round_up_to_io(packing.packed_bytes());
  PagePool host(allocate_pinned_region(40 * pitch), pitch);
  OffloadEngine engine(cache, {.chunk_bytes = 3 * packing.page_bytes(),
                               .host_pitch = round_up_to_io(packing.page_bytes())});
  std::vector<int64_t> pages, targets;
  std::vector<std::byte*> packed;
  for (int64_t i = 0; i < 20; ++i) {
    pages.push_back(47 - 2 * i);
    targets.push_back(2 * i);
    packed.push_back(host.page(static_cast<uint64_t>(i < 10 ? i : i + 5)));  // two runs with a gap
  }
  engine.offload_packed(packing, pages, packed);
  engine.synchronize();
  std::vector<std::vector<uint8_t>> records;
  for (size_t i = 0; i < pages.size(); ++i) {
    const auto staged = expected_page(cache, images, pages[i]);
    records.emplace_back(packing.packed_bytes());
    int4_group_quantize_reference(packing.params, {reinterpret_cast<const uint16_t*>(staged.data()), staged.size() / 2},
                                  records.back());
    EXPECT_EQ(std::memcmp(packed[i], records.back().data(), records.back().size()), 0) << "packed page " << pages[i];
  }

  engine.reload_packed(packing, targets, packed);
  engine.synchronize();
  for (size_t i = 0; i < targets.size(); ++i) {
    std::vector<uint16_t> values(packing.page_bytes() / 2);
    int4_group_dequantize_reference(packing.params, records[i], values);
    int64_t offset = 0;
    for (const PageGroup& group : cache.groups()) {
      std::vector<std::byte> page(static_cast<size_t>(group.page_bytes));
      KVTIER_GPU_CHECK(gpuMemcpy(page.data(), group.pool + targets[i] * group.page_stride, page.size(),
                                 gpuMemcpyDeviceToHost));
      EXPECT_EQ(std::memcmp(page.data(), reinterpret_cast<const std::byte*>(values.data()) + offset, page.size()), 0)
          << "reloaded page " << targets[i];
      offset += group.page_bytes;
    }
  }
}

TEST_F(OffloadEngineTest, RejectsPageIdsOutsideTheCache) {
  HbmKvCache cache(kMixedPageBytes, 4);
  PagePool host(allocate_pinned_region(1 << 16), 1 << 15);
  OffloadEngine engine(cache, {.host_pitch = 1 << 15});
  const std::vector<int64_t> pages = {4};
  std::vector<std::byte*> destinations = {host.page(0)};
  EXPECT_THROW(engine.offload(pages, destinations), StoreError);
}

}  // namespace
}  // namespace kvtier::hw
