#include "sim/cluster/shared_pool.h"

#include <gtest/gtest.h>

#include <vector>

#include "sim/cache/cache_test_support.h"

namespace kvtier {
namespace {

// A pool of `blocks` blocks under `policy`.
SharedPool pool(int64_t blocks, PolicyKind policy = PolicyKind::kLru) {
  return SharedPool(testing::make_tier("pool", blocks, policy));
}

TEST(SharedPool, FindsTheLeadingRunAndEvictsTheLeastRecent) {
  SharedPool p = pool(2);
  EXPECT_TRUE(p.store(1));
  EXPECT_TRUE(p.store(2));
  EXPECT_FALSE(p.store(2));  // held already: no store
  EXPECT_TRUE(p.store(3));   // evicts 1, the least recently stored
  EXPECT_EQ(p.leading_run(std::vector<uint64_t>{2, 3, 1}), 2);
  EXPECT_EQ(p.leading_run(std::vector<uint64_t>{1, 2}), 0);  // a run starts at the first block
  // The run referenced 2, then 3: 2 is now the least recent.
  EXPECT_TRUE(p.store(4));
  EXPECT_EQ(p.leading_run(std::vector<uint64_t>{3, 4}), 2);
  EXPECT_EQ(p.leading_run(std::vector<uint64_t>{2}), 0);
  EXPECT_EQ(p.used_blocks(), 2);
  EXPECT_EQ(p.stored_blocks(), 4);
  EXPECT_EQ(p.evicted_blocks(), 2);
  EXPECT_EQ(p.hit_blocks(), 4);
}

TEST(SharedPool, AnEvictedBlockCanBeStoredAgain) {
  SharedPool p = pool(1, PolicyKind::kLfu);
  EXPECT_TRUE(p.store(7));
  EXPECT_TRUE(p.store(8));
  EXPECT_EQ(p.leading_run(std::vector<uint64_t>{7}), 0);
  EXPECT_TRUE(p.store(7));
  EXPECT_EQ(p.leading_run(std::vector<uint64_t>{7}), 1);
}

}  // namespace
}  // namespace kvtier
