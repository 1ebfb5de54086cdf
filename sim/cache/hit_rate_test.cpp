// The replay driver: hit accounting by tier in blocks and tokens, truncation of requests longer than
// tier 0, and agreement with `kvtier trace stats`' theoretical maximum on the shared Mooncake sample.
#include "sim/cache/hit_rate.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>

#include "sim/cache/cache_test_support.h"
#include "sim/workload/trace_reader.h"
#include "sim/workload/trace_stats.h"

namespace kvtier {
namespace {

using testing::make_request;
using testing::make_tier;

TEST(TokensPerBlock, LastBlockIsPartial) {
  Request r = make_request({1, 2, 3});
  r.input_tokens = 9;  // blocks of 4: 4 + 4 + 1
  std::vector<int64_t> tokens;
  tokens_per_block(r, 4, tokens);
  EXPECT_EQ(tokens, (std::vector<int64_t>{4, 4, 1}));
  r.input_tokens = 0;
  tokens_per_block(r, 4, tokens);
  EXPECT_EQ(tokens, (std::vector<int64_t>{4, 4, 4}));
}

TEST(TokensPerBlock, HugeBlocksDoNotWrap) {
  // Blocks of 2^62 tokens: the third starts at 2^63, past int64_t; it and the second hold none of the input.
  Request r = make_request({1, 2, 3});
  r.input_tokens = 5;
  std::vector<int64_t> tokens;
  tokens_per_block(r, int64_t{1} << 62, tokens);
  EXPECT_EQ(tokens, (std::vector<int64_t>{5, 0, 0}));
}

TEST(HitRateCurve, CapacityWhoseBytesOverflowIsAnError) {
  // 32 B per 4-token block (make_tier's default): 2^58 blocks are 2^63 B, one more than int64_t holds.
  TierSpec tier = make_tier("cache", 0, PolicyKind::kLfu);
  std::vector<Request> requests{make_request({1, 2})};
  EXPECT_EQ(hit_rate_curve(requests, tier, {int64_t{1} << 57})[0].capacity_blocks, int64_t{1} << 57);
  EXPECT_THROW(hit_rate_curve(requests, tier, {int64_t{1} << 58}), ConfigError);
}

TEST(CacheReplay, CountsHitsByTierInBlocksAndTokens) {
  CacheReplay replay({make_tier("hbm", 2), make_tier("dram", 8)});
  Request first = make_request({1, 2, 3});
  first.input_tokens = 10;           // 4 + 4 + 2
  replay.add(first);                 // truncated: HBM holds 2 blocks, so 1 and 2 are cached
  replay.add(make_request({5, 6}));  // 1 and 2 go to DRAM
  Request again = make_request({1, 2});
  again.input_tokens = 7;  // 4 + 3
  replay.add(again);
  ReplayResult result = replay.result();
  EXPECT_EQ(result.requests, 3);
  EXPECT_EQ(result.truncated_requests, 1);
  EXPECT_EQ(result.total.blocks, 7);
  EXPECT_EQ(result.total.tokens, 10 + 8 + 7);
  EXPECT_EQ(result.hits_by_tier[0].blocks, 0);
  EXPECT_EQ(result.hits_by_tier[1].blocks, 2);
  EXPECT_EQ(result.hits_by_tier[1].tokens, 7);
  EXPECT_EQ(result.traffic.flow(CacheEventKind::kPromote, 1, 0).blocks, 2);
}

TEST(HitRateCurve, EveryPolicyReachesTheBoundWhenNothingIsEvicted) {
  auto requests = testing::random_requests(400, 20, 10, 3);
  std::set<uint64_t> distinct;
  for (const Request& r : requests) distinct.insert(r.block_ids.begin(), r.block_ids.end());
  int64_t room = static_cast<int64_t>(distinct.size());
  LruCurve bound;
  std::vector<int64_t> tokens;
  for (const Request& r : requests) {
    tokens_per_block(r, testing::kBlockTokens, tokens);
    bound.add(r.block_ids, tokens);
  }
  for (PolicyKind policy : {PolicyKind::kLru, PolicyKind::kLfu, PolicyKind::kArc, PolicyKind::kS3Fifo}) {
    auto curve = hit_rate_curve(requests, make_tier("hbm", 0, policy), {room / 4, room});
    EXPECT_EQ(curve[1].hits.tokens, bound.hit_tokens(std::numeric_limits<int64_t>::max()))
        << policy_name(policy);
    EXPECT_LT(curve[0].hits.tokens, curve[1].hits.tokens) << policy_name(policy);
  }
}

// `kvtier trace stats` computes the same bound its own way (a prefix forest); an LRU cache big enough for
// every distinct block, replayed request by request, must reach it exactly.
TEST(MooncakeSample, InfiniteCapacityAgreesWithTraceStats) {
  const std::string path = "traces/mooncake-conversation-first2000.jsonl";
  if (!std::filesystem::exists(path))
    FAIL() << path << " is missing: the tests run from the source root, where traces/ holds it";
  auto stream = open_trace(path, TraceReadOptions{});
  TraceStats stats = compute_trace_stats(*stream);

  auto again = open_trace(path, TraceReadOptions{});
  std::vector<Request> requests;
  Request request;
  while (again->next(request)) requests.push_back(request);
  TierSpec tier = single_tier(testing::flat_layout(1), again->block_tokens(), 0, PolicyKind::kLru);
  auto points = hit_rate_curve(requests, tier, {stats.unique_blocks});
  EXPECT_EQ(points[0].hits.blocks, stats.hit_blocks);
  EXPECT_EQ(points[0].hits.tokens, stats.hit_tokens);
  EXPECT_EQ(stats.hit_blocks, 15771);  // 28.9 % of 54,559 block accesses

  tier.capacity_bytes = stats.unique_blocks * tier.bytes_per_block();
  CacheReplay replay({tier});
  for (const Request& r : requests) replay.add(r);
  EXPECT_EQ(replay.result().hits().blocks, stats.hit_blocks);
  EXPECT_EQ(replay.result().hits().tokens, stats.hit_tokens);
}

}  // namespace
}  // namespace kvtier
