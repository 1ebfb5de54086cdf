#include "sim/workload/block_chain.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace kvtier {
namespace {

std::vector<uint64_t> chain(const std::vector<Segment>& segments, int64_t block_tokens) {
  std::vector<uint64_t> ids;
  chain_blocks(segments, block_tokens, 0, ids);
  return ids;
}

TEST(BlockChain, BlockCountIsCeilingOfTokens) {
  EXPECT_EQ(chain({{1, 1000}}, 256).size(), 4u);  // 1000 / 256 = 3.9
  EXPECT_EQ(chain({{1, 1024}}, 256).size(), 4u);
  EXPECT_EQ(chain({{1, 1025}}, 256).size(), 5u);
  EXPECT_TRUE(chain({}, 256).empty());
}

TEST(BlockChain, EqualPrefixesGiveEqualIdsAndADifferenceChangesEveryLaterId) {
  std::vector<uint64_t> a = chain({{7, 512}, {8, 512}, {9, 512}}, 256);
  std::vector<uint64_t> b = chain({{7, 512}, {8, 300}, {5, 724}}, 256);
  ASSERT_EQ(a.size(), 6u);
  ASSERT_EQ(b.size(), 6u);
  // Tokens 0-767 agree (7 for 512, then 8 for 256): blocks 0-2 are equal, block 3 covers 8's tokens
  // 256-299 in b but 256-511 in a.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a[i], b[i]) << i;
  for (int i = 3; i < 6; ++i) EXPECT_NE(a[i], b[i]) << i;
  // A different first block changes everything, even where later content agrees.
  std::vector<uint64_t> c = chain({{6, 512}, {8, 512}, {9, 512}}, 256);
  for (int i = 0; i < 6; ++i) EXPECT_NE(a[i], c[i]) << i;
}

TEST(BlockChain, SegmentBoundariesInsideABlockDoNotMatterOnlyContentDoes) {
  // One 600-token segment equals its own prefix cut at 300 when the cut piece keeps its key and offsets.
  EXPECT_EQ(chain({{3, 600}}, 256)[0], chain({{3, 300}}, 256)[0]);
  EXPECT_NE(chain({{3, 600}}, 256)[1], chain({{3, 300}}, 256)[1]);  // 256-511 vs 256-299
}

TEST(BlockChain, RecomputingFromAnUnchangedBlockGivesTheSameIds) {
  std::vector<uint64_t> full = chain({{1, 700}, {2, 900}}, 128);
  std::vector<uint64_t> partial = chain({{1, 700}}, 128);  // blocks 0-4 full, 5 partial
  chain_blocks({{1, 700}, {2, 900}}, 128, 5, partial);
  EXPECT_EQ(partial, full);
}

// The definition in block_chain.h, token by token: a block's content hash mixes key, start and end
// of each segment piece it covers; its id mixes the previous id with that content.
std::vector<uint64_t> reference_chain(const std::vector<Segment>& segments, int64_t block_tokens) {
  std::vector<uint64_t> ids;
  int64_t total = 0;
  for (const Segment& s : segments) total += s.tokens;
  uint64_t previous = 0x6b76746965722d31ULL;  // "kvtier-1"
  for (int64_t begin = 0; begin < total; begin += block_tokens) {
    int64_t end = std::min(begin + block_tokens, total);
    uint64_t content = 0;
    int64_t segment_start = 0;
    for (const Segment& s : segments) {
      int64_t from = std::max(begin, segment_start), to = std::min(end, segment_start + s.tokens);
      if (from < to) {
        content = mix_ids(content, s.key);
        content = mix_ids(content, static_cast<uint64_t>(from - segment_start));
        content = mix_ids(content, static_cast<uint64_t>(to - segment_start));
      }
      segment_start += s.tokens;
    }
    previous = mix_ids(previous, content);
    ids.push_back(previous);
  }
  return ids;
}

TEST(BlockChain, MatchesTheTokenByTokenDefinitionFromAnyFirstBlock) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<Segment> segments(1 + rng() % 12);
    for (Segment& s : segments) {
      s.key = rng() % 4;  // repeated keys: equal content in different places
      s.tokens = 1 + static_cast<int64_t>(rng() % (rng() % 2 ? 40 : 900));
    }
    int64_t block_tokens = 1 + static_cast<int64_t>(rng() % 300);
    std::vector<uint64_t> expected = reference_chain(segments, block_tokens);
    ASSERT_EQ(chain(segments, block_tokens), expected) << "trial " << trial;
    // From a later first block, the ids below it are taken as they are.
    size_t first = rng() % (expected.size() + 1);
    std::vector<uint64_t> partial(expected.begin(), expected.begin() + static_cast<long>(first));
    chain_blocks(segments, block_tokens, first, partial);
    ASSERT_EQ(partial, expected) << "trial " << trial << ", first block " << first;
  }
}

TEST(Reblock, SameSizeKeepsTheIds) {
  std::vector<uint64_t> out;
  reblock({11, 12, 13}, 512, 1300, 512, out);
  EXPECT_EQ(out, (std::vector<uint64_t>{11, 12, 13}));
}

TEST(Reblock, GroupingSixteenTokenIdsKeepsThePrefixProperty) {
  // Two Bailian-like requests share their first 20 16-token blocks (320 tokens), then differ.
  std::vector<uint64_t> a, b;
  for (uint64_t i = 0; i < 40; ++i) a.push_back(i);
  for (uint64_t i = 0; i < 40; ++i) b.push_back(i < 20 ? i : 1000 + i);
  std::vector<uint64_t> ra, rb;
  reblock(a, 16, 640, 256, ra);
  reblock(b, 16, 640, 256, rb);
  ASSERT_EQ(ra.size(), 3u);  // 640 tokens in 256-token blocks
  EXPECT_EQ(ra[0], rb[0]);   // tokens 0-255 shared
  EXPECT_NE(ra[1], rb[1]);   // tokens 256-511 differ from token 320 on
  EXPECT_NE(ra[2], rb[2]);   // later content is equal in neither, and the chain differs anyway
}

TEST(Reblock, SplittingKeepsEqualityOfTheSourceBlocks) {
  std::vector<uint64_t> a, b;
  reblock({5, 6}, 512, 1024, 128, a);
  reblock({5, 7}, 512, 1000, 128, b);
  ASSERT_EQ(a.size(), 8u);
  ASSERT_EQ(b.size(), 8u);  // ceil(1000 / 128)
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a[i], b[i]) << i;
  for (int i = 4; i < 8; ++i) EXPECT_NE(a[i], b[i]) << i;
}

TEST(Reblock, IgnoresIdsPastTheInput) {
  std::vector<uint64_t> a, b;
  reblock({1, 2, 3}, 16, 20, 256, a);
  reblock({1, 2}, 16, 20, 256, b);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 1u);
}

}  // namespace
}  // namespace kvtier
