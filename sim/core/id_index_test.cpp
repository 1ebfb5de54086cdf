#include "sim/core/id_index.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace kvtier {
namespace {

TEST(IdIndex, AgreesWithAStandardMapThroughGrowth) {
  // 300,000 ids take the hash table from 64K slots through several doublings, past the 2 MiB from
  // which its memory comes from allocate_huge_pages. Small consecutive ids (Mooncake), which the array
  // takes, and random ones, which it does not.
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

TEST(IdIndex, AnIdHashedBeforeTheArrayReachesItKeepsItsValue) {
  // 1,000,000 is past the array while few ids are stored, so it is hashed; 300,000 dense ids then take
  // the array past it. It must still be found, once, with its first value.
  IdIndex index;
  EXPECT_EQ(index.insert(1000000, 7), 7u);
  for (uint32_t id = 0; id < 300000; ++id) ASSERT_EQ(index.insert(id, id + 100), id + 100);
  EXPECT_EQ(index.find(1000000), 7u);
  EXPECT_EQ(index.insert(1000000, 8), 7u);
  EXPECT_EQ(index.insert(999999, 9), 9u);  // within the array now: stored there
  EXPECT_EQ(index.find(999999), 9u);
  EXPECT_EQ(index.find(999998), IdIndex::kAbsent);
  EXPECT_EQ(index.size(), 300002u);
}

TEST(IdIndex, AgreesWithAStandardMapOnSparseIds) {
  // Ids spread over 16x the number stored: most stay out of the array, some fall in it.
  IdIndex index;
  std::unordered_map<uint64_t, uint32_t> reference;
  std::mt19937_64 rng(11);
  for (uint32_t i = 0; i < 200000; ++i) {
    const uint64_t id = rng() % (16 * uint64_t{200000});
    ASSERT_EQ(index.insert(id, i), reference.try_emplace(id, i).first->second);
  }
  EXPECT_EQ(index.size(), reference.size());
  for (const auto& [id, value] : reference) ASSERT_EQ(index.find(id), value) << id;
}

}  // namespace
}  // namespace kvtier
