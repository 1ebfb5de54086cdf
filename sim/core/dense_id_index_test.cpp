#include "sim/core/dense_id_index.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace kvtier {
namespace {

// Inserts `ids` into a DenseIdIndex and a std::unordered_map, then finds every one in both.
void expect_agreement(const std::vector<uint64_t>& ids) {
  DenseIdIndex index;
  std::unordered_map<uint64_t, uint32_t> reference;
  for (uint32_t i = 0; i < ids.size(); ++i) {
    ASSERT_EQ(index.insert(ids[i], i), reference.try_emplace(ids[i], i).first->second) << ids[i];
  }
  EXPECT_EQ(index.size(), reference.size());
  for (const auto& [id, value] : reference) ASSERT_EQ(index.find(id), value) << id;
}

TEST(DenseIdIndex, AgreesWithAStandardMapOnDenseSparseAndMixedIds) {
  std::mt19937_64 rng(7);
  std::vector<uint64_t> dense, sparse, mixed;
  for (uint64_t i = 0; i < 200000; ++i) {
    dense.push_back(i / 2);                       // Mooncake-like: in order, each seen twice
    sparse.push_back(rng() % 3200000);            // over 16x the ids stored: mostly hashed
    mixed.push_back(i % 2 == 0 ? i / 2 : rng());  // half small and dense, half 64-bit hashes
  }
  expect_agreement(dense);
  expect_agreement(sparse);
  expect_agreement(mixed);
}

TEST(DenseIdIndex, AnIdHashedBeforeTheArrayReachesItKeepsItsValue) {
  // 1,000,000 is past the array while few ids are stored, so it is hashed; 300,000 dense ids then take
  // the array past it. It must still be found, once, with its first value.
  DenseIdIndex index;
  EXPECT_EQ(index.insert(1000000, 7), 7u);
  for (uint32_t id = 0; id < 300000; ++id) ASSERT_EQ(index.insert(id, id + 100), id + 100);
  EXPECT_EQ(index.find(1000000), 7u);
  EXPECT_EQ(index.insert(1000000, 8), 7u);
  EXPECT_EQ(index.insert(999999, 9), 9u);  // within the array now: stored there
  EXPECT_EQ(index.find(999999), 9u);
  EXPECT_EQ(index.find(999998), DenseIdIndex::kAbsent);
  EXPECT_EQ(index.find(uint64_t{1} << 40), DenseIdIndex::kAbsent);
  EXPECT_EQ(index.size(), 300002u);
}

}  // namespace
}  // namespace kvtier
