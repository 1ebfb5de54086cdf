#include "sim/cluster/router.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvtier {
namespace {

Request request(std::vector<uint64_t> blocks, int64_t session = -1) {
  Request r;
  r.session_id = session;
  r.block_ids = std::move(blocks);
  r.input_tokens = static_cast<int64_t>(r.block_ids.size()) * 512;
  return r;
}

CacheEvent event(CacheEventKind kind, uint64_t block, int from, int to) {
  return {kind, block, from, to, 0, 0};
}

Router router(RouterPolicy policy, int instances, double staleness_s = 0) {
  RouterConfig c;
  c.policy = policy;
  c.staleness_s = staleness_s;
  c.block_tokens = 512;
  return Router(c, instances, {false, false, true});  // tiers 0 and 1 inclusive, tier 2 exclusive
}

TEST(Router, RoundRobinTakesInstancesInTurn) {
  Router r = router(RouterPolicy::kRoundRobin, 3);
  std::vector<InstanceLoad> loads(3);
  std::vector<int> chosen;
  for (int i = 0; i < 4; ++i) chosen.push_back(r.route(request({1}), 0, loads));
  EXPECT_EQ(chosen, (std::vector<int>{0, 1, 2, 0}));
}

TEST(Router, LeastLoadedCountsRequestsThenTokens) {
  Router r = router(RouterPolicy::kLeastLoaded, 3);
  std::vector<InstanceLoad> loads = {{3, 100}, {1, 500}, {1, 200}};
  EXPECT_EQ(r.route(request({1}), 0, loads), 2);
  loads[2] = {2, 0};
  EXPECT_EQ(r.route(request({1}), 0, loads), 1);
}

TEST(Router, SessionStickyKeepsASessionWhereItsFirstTurnWent) {
  Router r = router(RouterPolicy::kSessionSticky, 3);
  std::vector<InstanceLoad> loads = {{2, 0}, {0, 0}, {1, 0}};
  EXPECT_EQ(r.route(request({1}, 7), 0, loads), 1);
  loads[1] = {9, 0};  // now the busiest: the session stays
  EXPECT_EQ(r.route(request({1, 2}, 7), 1, loads), 1);
  EXPECT_EQ(r.route(request({5}, 8), 1, loads), 2);   // a new session goes to the least loaded
  EXPECT_EQ(r.route(request({5}, -1), 1, loads), 2);  // so does a request without one
}

TEST(Router, PrefixAwareWeighsBlocksToPrefillAgainstBlocksActive) {
  Router r = router(RouterPolicy::kPrefixAware, 3);
  for (uint64_t b : {10, 11, 12}) r.on_cache_event(1, 0, event(CacheEventKind::kPlace, b, -1, 0));
  r.on_cache_event(0, 0, event(CacheEventKind::kPlace, 10, -1, 0));
  std::vector<InstanceLoad> idle(3);
  // Costs 3, 1 and 4 blocks to prefill.
  EXPECT_EQ(r.route(request({10, 11, 12, 13}), 1, idle), 1);
  // 4,096 tokens active on instance 1 are 8 blocks: 1 + 8 against instance 0's 3 + 0.
  std::vector<InstanceLoad> busy = {{0, 0}, {1, 4096}, {0, 0}};
  EXPECT_EQ(r.route(request({10, 11, 12, 13}), 1, busy), 0);
}

TEST(Router, PrefixAwareBreaksCostTiesByLoad) {
  Router r = router(RouterPolicy::kPrefixAware, 3);
  // Nothing cached: cost = 2 blocks + active blocks; instances 1 and 2 both cost 2, 2 has fewer requests.
  std::vector<InstanceLoad> loads = {{1, 512}, {3, 0}, {1, 0}};
  EXPECT_EQ(r.route(request({1, 2}), 0, loads), 2);
}

TEST(Router, APrefixEndsAtTheFirstBlockTheInstanceLacks) {
  Router r = router(RouterPolicy::kPrefixAware, 2);
  for (uint64_t b : {1, 2, 4}) r.on_cache_event(0, 0, event(CacheEventKind::kPlace, b, -1, 0));
  EXPECT_EQ(r.cached_prefix_blocks(0, std::vector<uint64_t>{1, 2, 3, 4}, 0), 2);
  EXPECT_EQ(r.cached_prefix_blocks(0, std::vector<uint64_t>{1, 2, 4}, 0), 3);
  EXPECT_EQ(r.cached_prefix_blocks(1, std::vector<uint64_t>{1, 2, 4}, 0), 0);
  EXPECT_EQ(r.cached_prefix_blocks(0, std::vector<uint64_t>{3, 1}, 0), 0);
}

TEST(Router, FollowsABlockThroughTheTiersUntilItLeavesTheLast) {
  Router r = router(RouterPolicy::kPrefixAware, 1);
  std::vector<uint64_t> b = {5};
  r.on_cache_event(0, 0, event(CacheEventKind::kPlace, 5, -1, 0));
  r.on_cache_event(0, 0, event(CacheEventKind::kDemote, 5, 0, 1));
  EXPECT_EQ(r.cached_prefix_blocks(0, b, 0), 1);                     // in tier 1 now
  r.on_cache_event(0, 0, event(CacheEventKind::kPromote, 5, 1, 0));  // inclusive: tier 1 keeps it
  r.on_cache_event(0, 0, event(CacheEventKind::kDrop, 5, 0, -1));
  EXPECT_EQ(r.cached_prefix_blocks(0, b, 0), 1);
  r.on_cache_event(0, 0, event(CacheEventKind::kWriteThrough, 5, 1, 2));
  r.on_cache_event(0, 0, event(CacheEventKind::kDrop, 5, 1, -1));
  EXPECT_EQ(r.cached_prefix_blocks(0, b, 0), 1);                     // in tier 2
  r.on_cache_event(0, 0, event(CacheEventKind::kPromote, 5, 2, 0));  // exclusive: tier 2 gives it up
  r.on_cache_event(0, 0, event(CacheEventKind::kDrop, 5, 0, -1));
  EXPECT_EQ(r.cached_prefix_blocks(0, b, 0), 0);
}

TEST(Router, SeesAnEventOnlyOnceItsStalenessHasPassed) {
  Router r = router(RouterPolicy::kPrefixAware, 2, 1.0);
  r.on_cache_event(1, 2.0, event(CacheEventKind::kPlace, 9, -1, 0));
  std::vector<InstanceLoad> loads = {{0, 0}, {1, 0}};
  EXPECT_EQ(r.route(request({9}), 2.5, loads), 0);  // not yet seen: the lighter instance
  EXPECT_EQ(r.route(request({9}), 3.0, loads), 1);  // seen: no block to prefill there
}

TEST(Router, HoldsMoreThanSixtyFourInstances) {
  Router r = router(RouterPolicy::kPrefixAware, 70);
  r.on_cache_event(66, 0, event(CacheEventKind::kPlace, 1, -1, 0));
  r.on_cache_event(66, 0, event(CacheEventKind::kPlace, 2, -1, 0));
  r.on_cache_event(3, 0, event(CacheEventKind::kPlace, 1, -1, 0));
  std::vector<InstanceLoad> loads(70);
  EXPECT_EQ(r.route(request({1, 2}), 0, loads), 66);
  EXPECT_EQ(r.cached_prefix_blocks(3, std::vector<uint64_t>{1, 2}, 0), 1);
  EXPECT_EQ(r.cached_prefix_blocks(69, std::vector<uint64_t>{1, 2}, 0), 0);
}

}  // namespace
}  // namespace kvtier
