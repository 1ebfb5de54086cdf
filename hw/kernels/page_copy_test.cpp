#include "hw/kernels/page_copy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "sim/core/config_files.h"
#include "sim/core/kv_layout.h"
#include "sim/core/model_card.h"

namespace kvtier::hw {
namespace {

// Pools filled with random bytes, including NaN patterns, -0 and 0xFF, as opaque bytes.
struct Pools {
  std::vector<std::vector<std::byte>> storage;
  std::vector<PageGroup> groups;
};

Pools make_pools(const std::vector<int64_t>& page_bytes, const std::vector<int64_t>& strides, int64_t pages,
                 uint32_t seed) {
  Pools pools;
  std::mt19937 rng(seed);
  for (size_t g = 0; g < page_bytes.size(); ++g) {
    std::vector<std::byte> bytes(static_cast<size_t>(strides[g] * pages));
    for (std::byte& b : bytes) b = static_cast<std::byte>(rng());
    pools.storage.push_back(std::move(bytes));
  }
  for (size_t g = 0; g < page_bytes.size(); ++g) {
    pools.groups.push_back({pools.storage[g].data(), pages, strides[g], page_bytes[g]});
  }
  return pools;
}

TEST(PageCopyReference, StagingIsPageMajorWithGroupsInOrder) {
  Pools pools = make_pools({48, 20}, {64, 20}, 4, 1);
  std::vector<int64_t> ids = {2, 0};
  std::vector<std::byte> staging(2 * 68);
  copy_pages_reference(TransferDirection::kGather, pools.groups, ids, staging.data());
  EXPECT_EQ(staged_page_bytes(pools.groups), 68);
  EXPECT_EQ(std::memcmp(staging.data(), pools.storage[0].data() + 2 * 64, 48), 0);
  EXPECT_EQ(std::memcmp(staging.data() + 48, pools.storage[1].data() + 2 * 20, 20), 0);
  EXPECT_EQ(std::memcmp(staging.data() + 68, pools.storage[0].data(), 48), 0);
  EXPECT_EQ(std::memcmp(staging.data() + 116, pools.storage[1].data(), 20), 0);
}

TEST(PageCopyReference, ScatterOfAGatherRestoresOnlyTheListedPages) {
  Pools source = make_pools({4096, 1088, 3}, {4608, 1100, 16}, 32, 2);
  Pools target = make_pools({4096, 1088, 3}, {4608, 1100, 16}, 32, 3);
  std::vector<int64_t> ids = {31, 5, 17, 0};
  std::vector<std::byte> staging(ids.size() * staged_page_bytes(source.groups));
  copy_pages_reference(TransferDirection::kGather, source.groups, ids, staging.data());
  Pools untouched = make_pools({4096, 1088, 3}, {4608, 1100, 16}, 32, 3);
  copy_pages_reference(TransferDirection::kScatter, target.groups, ids, staging.data());
  for (size_t g = 0; g < 3; ++g) {
    const PageGroup& group = source.groups[g];
    for (int64_t page = 0; page < 32; ++page) {
      bool listed = std::find(ids.begin(), ids.end(), page) != ids.end();
      const auto& expected = listed ? source.storage[g] : untouched.storage[g];
      ASSERT_EQ(std::memcmp(target.storage[g].data() + page * group.page_stride,
                            expected.data() + page * group.page_stride, group.page_bytes),
                0)
          << "group " << g << " page " << page;
      // Bytes past page_bytes (the stride's padding) are never written.
      ASSERT_EQ(std::memcmp(target.storage[g].data() + page * group.page_stride + group.page_bytes,
                            untouched.storage[g].data() + page * group.page_stride + group.page_bytes,
                            group.page_stride - group.page_bytes),
                0);
    }
  }
}

TEST(PageCopyReference, RejectsBadGroupsAndPageIds) {
  Pools pools = make_pools({16}, {16}, 2, 4);
  std::vector<std::byte> staging(16);
  std::vector<int64_t> outside = {2};
  EXPECT_THROW(copy_pages_reference(TransferDirection::kGather, pools.groups, outside, staging.data()),
               std::invalid_argument);
  std::vector<PageGroup> too_many(kMaxPageGroups + 1, pools.groups[0]);
  EXPECT_THROW(validate_page_groups(too_many), std::invalid_argument);
  PageGroup wider = pools.groups[0];
  wider.page_bytes = 32;
  EXPECT_THROW(validate_page_groups(std::vector<PageGroup>{wider}), std::invalid_argument);
}

TEST(LayoutPageBytes, FollowsTheMixedBf16AndTurboQuantStack) {
  // Llama-3.1-70B, turboquant4: layers 0-1 and 78-79 bf16 (2 x 8 heads x 128 x 2 B = 4096 B per layer per
  // token), 76 layers of 8 slots x 136 B = 1088 B per layer per token; 16-token pages.
  ModelCard model = parse_model_card(load_config("llama-3.1-70b", "models"));
  KvLayout layout = resolve_kv_layout(model, "turboquant4");
  std::vector<int64_t> bytes = layout_page_bytes(layout, 16);
  ASSERT_EQ(bytes.size(), 3u);
  EXPECT_EQ(bytes[0], 2 * 4096 * 16);
  EXPECT_EQ(bytes[1], 76 * 1088 * 16);
  EXPECT_EQ(bytes[2], 2 * 4096 * 16);
}

}  // namespace
}  // namespace kvtier::hw
