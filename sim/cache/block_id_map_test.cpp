#include "sim/cache/block_id_map.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace kvtier {
namespace {

// Inserts and finds `ids` in both the map and std::unordered_map, then checks every id against it.
void check_against_std(const std::vector<uint64_t>& ids, const std::vector<uint64_t>& absent) {
  BlockIdMap map;
  std::unordered_map<uint64_t, uint32_t> reference;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto [value, inserted] = map.try_emplace(ids[i], static_cast<uint32_t>(i));
    auto [ref, ref_inserted] = reference.try_emplace(ids[i], static_cast<uint32_t>(i));
    ASSERT_EQ(inserted, ref_inserted) << "id " << ids[i];
    ASSERT_EQ(*value, ref->second) << "id " << ids[i];
  }
  EXPECT_EQ(map.size(), reference.size());
  for (const auto& [id, value] : reference) {
    const uint32_t* found = map.find(id);
    ASSERT_NE(found, nullptr) << "id " << id;
    EXPECT_EQ(*found, value) << "id " << id;
  }
  for (uint64_t id : absent) {
    if (!reference.contains(id)) {
      EXPECT_EQ(map.find(id), nullptr) << "id " << id;
    }
  }
}

TEST(BlockIdMap, AnEmptyMapFindsNothing) {
  BlockIdMap map;
  EXPECT_EQ(map.find(0), nullptr);
  EXPECT_EQ(map.find(UINT64_MAX), nullptr);
  EXPECT_EQ(map.size(), 0u);
}

TEST(BlockIdMap, AnIdKeepsItsFirstValue) {
  BlockIdMap map;
  EXPECT_TRUE(map.try_emplace(7, 1).second);
  auto [value, inserted] = map.try_emplace(7, 2);
  EXPECT_FALSE(inserted);
  EXPECT_EQ(*value, 1u);
  *map.find(7) = 5;  // values may be updated in place (the LRU curve's stamps are)
  EXPECT_EQ(*map.find(7), 5u);
  EXPECT_EQ(map.size(), 1u);
}

TEST(BlockIdMap, ConsecutiveIdsThroughSeveralGrowths) {
  std::vector<uint64_t> ids;
  for (uint64_t id = 0; id < 100'000; ++id) ids.push_back(id);
  for (uint64_t id = 0; id < 100'000; id += 3) ids.push_back(id);  // repeats
  check_against_std(ids, {100'000, 100'001, UINT64_MAX});
}

TEST(BlockIdMap, IdsThatShareTheirLowBitsAndTheExtremes) {
  // Multiples of 2^32 and 2^48 differ only in bits a weak hash would drop; 0 and UINT64_MAX are valid ids.
  std::vector<uint64_t> ids{0, UINT64_MAX, UINT64_MAX - 1};
  for (uint64_t k = 1; k < 5'000; ++k) ids.push_back(k << 32);
  for (uint64_t k = 1; k < 5'000; ++k) ids.push_back(k << 48);
  check_against_std(ids, {1, 2, 1ULL << 31, (5'000ULL << 32)});
}

TEST(BlockIdMap, RandomIdsWithRepeats) {
  std::mt19937_64 rng(42);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 200'000; ++i)
    ids.push_back(i % 4 == 0 && !ids.empty() ? ids[rng() % ids.size()] : rng());
  std::vector<uint64_t> absent;
  for (int i = 0; i < 1'000; ++i) absent.push_back(rng());
  check_against_std(ids, absent);
}

}  // namespace
}  // namespace kvtier
