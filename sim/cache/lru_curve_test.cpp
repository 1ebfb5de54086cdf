// The one-pass LRU curve against hand arithmetic, a slow move-to-front reference, and the tiered cache.
#include "sim/cache/lru_curve.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <list>

#include "sim/cache/cache_test_support.h"
#include "sim/cache/hit_rate.h"

namespace kvtier {
namespace {

using testing::kBlockTokens;

constexpr int64_t kInfinite = std::numeric_limits<int64_t>::max();

void add(LruCurve& curve, const std::vector<uint64_t>& blocks) {
  std::vector<int64_t> tokens(blocks.size(), kBlockTokens);
  curve.add(blocks, tokens);
}

// [1,2] [3] [1,2] [3,4]. Before the third request the stack is 3 1 2: depths 2 and 3, so one hit block at
// capacity 2 and two at 3. Before the fourth it is 1 2 3: 3 at depth 3, 4 never seen.
TEST(LruCurve, HandWorkedStackDistances) {
  LruCurve curve;
  add(curve, {1, 2});
  add(curve, {3});
  add(curve, {1, 2});
  add(curve, {3, 4});
  EXPECT_EQ(curve.total_blocks(), 7);
  EXPECT_EQ(curve.hit_blocks(1), 0);
  EXPECT_EQ(curve.hit_blocks(2), 1);
  EXPECT_EQ(curve.hit_blocks(3), 3);
  EXPECT_EQ(curve.hit_blocks(kInfinite), 3);
  EXPECT_EQ(curve.hit_tokens(3), 3 * kBlockTokens);
}

// The slow reference: one list per capacity, most recent first, each request's chain moved to the front
// in order and the list cut to the capacity.
int64_t slow_lru_hits(const std::vector<Request>& requests, size_t capacity) {
  std::list<uint64_t> stack;
  int64_t hits = 0;
  for (const Request& r : requests) {
    for (uint64_t id : r.block_ids) {
      if (std::find(stack.begin(), stack.end(), id) == stack.end()) break;
      ++hits;
    }
    for (auto id = r.block_ids.rbegin(); id != r.block_ids.rend(); ++id) {
      stack.remove(*id);
      stack.push_front(*id);
    }
    if (stack.size() > capacity) stack.resize(capacity);
  }
  return hits;
}

TEST(LruCurve, MatchesSlowReferenceAtEveryCapacity) {
  auto requests = testing::random_requests(1500, 40, 12, 42);  // > 1024 stamps: compaction runs
  LruCurve curve;
  std::vector<int64_t> tokens;
  for (const Request& r : requests) {
    tokens_per_block(r, kBlockTokens, tokens);
    curve.add(r.block_ids, tokens);
  }
  for (size_t capacity : {1, 2, 5, 11, 12, 13, 30, 60, 120, 250, 400, 1000}) {
    EXPECT_EQ(curve.hit_blocks(static_cast<int64_t>(capacity)), slow_lru_hits(requests, capacity))
        << capacity;
  }
}

TEST(LruCurve, MatchesTieredCacheReplay) {
  auto requests = testing::random_requests(800, 30, 10, 5);
  TierSpec tier = testing::make_tier("hbm", 0);
  std::vector<int64_t> capacities = {3, 10, 25, 60, 100, 200};
  auto curve = hit_rate_curve(requests, tier, capacities);
  for (size_t i = 0; i < capacities.size(); ++i) {
    TierSpec sized = testing::make_tier("hbm", capacities[i]);
    CacheReplay replay({sized});
    for (const Request& r : requests) replay.add(r);
    HitCount hits = replay.result().hits();
    EXPECT_EQ(curve[i].hits.blocks, hits.blocks) << capacities[i];
    EXPECT_EQ(curve[i].hits.tokens, hits.tokens) << capacities[i];
  }
}

TEST(LruCurve, InfiniteCapacityCountsEveryBlockWhosePrefixWasSeen) {
  auto requests = testing::random_requests(500, 25, 9, 11);
  LruCurve curve;
  std::vector<int64_t> tokens;
  std::set<uint64_t> seen;
  int64_t expected = 0;
  for (const Request& r : requests) {
    for (uint64_t id : r.block_ids) {
      if (!seen.count(id)) break;
      ++expected;
    }
    seen.insert(r.block_ids.begin(), r.block_ids.end());
    tokens_per_block(r, kBlockTokens, tokens);
    curve.add(r.block_ids, tokens);
  }
  EXPECT_EQ(curve.hit_blocks(kInfinite), expected);
}

}  // namespace
}  // namespace kvtier
