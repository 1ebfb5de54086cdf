#include "sim/core/id_index.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace kvtier {
namespace {

TEST(IdIndex, AgreesWithAStandardMapThroughGrowth) {
  // 300,000 ids take the table from 64K slots through several doublings, past the 2 MiB from which
  // its memory comes from allocate_huge_pages. Small consecutive ids (Mooncake) and random ones.
  IdIndex index;
  std::unordered_map<uint64_t, uint32_t> reference;
  std::mt19937_64 rng(7);
  for (uint32_t i = 0; i < 300000; ++i) {
    uint64_t id = i % 2 == 0 ? i / 2 : rng();
    index.prefetch(id);
    EXPECT_EQ(index.insert(id, i), reference.try_emplace(id, i).first->second);
  }
  EXPECT_EQ(index.size(), reference.size());
  for (const auto& [id, value] : reference) ASSERT_EQ(index.find(id), value) << id;
  EXPECT_EQ(index.insert(0, 12345), 0u);  // present: keeps its value
  EXPECT_EQ(index.find(uint64_t{1} << 40), IdIndex::kAbsent);
}

}  // namespace
}  // namespace kvtier
