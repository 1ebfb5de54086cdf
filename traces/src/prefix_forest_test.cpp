#include "prefix_forest.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>
#include <vector>

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

TEST(ChunkedIds, AppendsAcrossChunkBoundaries) {
  // Runs of 1,000 ids do not divide the 2^20-id chunks: some runs span two chunks.
  ChunkedIds ids;
  std::vector<uint64_t> run(1000);
  for (uint64_t start = 0; start < 2'500'000; start += run.size()) {
    for (size_t i = 0; i < run.size(); ++i) run[i] = (start + i) * 3;
    ids.append(run.data(), run.data() + run.size());
  }
  ASSERT_EQ(ids.size(), 2'500'000u);
  for (size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(ids[i], i * 3) << i;
}

}  // namespace
}  // namespace kvtier
