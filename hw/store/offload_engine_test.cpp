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
