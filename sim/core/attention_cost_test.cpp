// The attention launch model against hand-computed launches and a slow reference: a per-block loop in the
// kernel's launch order that puts each block on the first free slot found by a linear scan.
#include "sim/core/attention_cost.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace kvtier {
namespace {

AttentionKernelCost kernel(int key_tile, int slots, double launch_s, double block_s, double key_tile_s,
                           double row_group_tile_s = 0, double empty_block_s = 0) {
  return {.key_tile = key_tile,
          .slots = slots,
          .launch_s = launch_s,
          .block_s = block_s,
          .key_tile_s = key_tile_s,
          .row_group_tile_s = row_group_tile_s,
          .empty_block_s = empty_block_s};
}

// One block of a sequence's query tile starting at token `tok0`, as the kernel cuts it.
double tile_seconds(const AttentionCosts& c, const AttentionKernelCost& k, int gqa_ratio,
                    const AttentionSequence& s, int splits, int split, int64_t tok0) {
  const int64_t per_tile = std::max(1, c.query_rows / gqa_ratio);
  const int64_t total = s.context_tokens + s.new_tokens;
  const int64_t split_tiles = (total + c.split.key_tile - 1) / c.split.key_tile;
  const int64_t range = (split_tiles + splits - 1) / splits * c.split.key_tile;
  const int64_t last = std::min(s.new_tokens, tok0 + per_tile);
  const int64_t begin = splits == 1 ? 0 : range * split;
  const int64_t stop =
      splits == 1 ? s.context_tokens + last : std::min(s.context_tokens + last, range * (split + 1));
  const int64_t keys = std::max<int64_t>(0, stop - begin);
  const int64_t rows = std::min<int64_t>(c.query_rows, (last - tok0) * gqa_ratio);
  const double tile_s = k.key_tile_s + k.row_group_tile_s * static_cast<double>((rows + 15) / 16);
  return k.block_s + tile_s * static_cast<double>((keys + k.key_tile - 1) / k.key_tile);
}

// The kernel's cut, block by block (grid x = KV head fastest, y = query tile with the last first, as many
// for every sequence as the longest has, z = sequence × splits + split), each block on the earliest-free
// slot by a linear scan.
double reference_launch_seconds(const AttentionCosts& c, int kv_heads, int gqa_ratio,
                                const std::vector<AttentionSequence>& step) {
  if (step.empty()) return 0;
  int64_t max_new = 0, max_total = 0;
  for (const AttentionSequence& s : step) {
    max_new = std::max(max_new, s.new_tokens);
    max_total = std::max(max_total, s.context_tokens + s.new_tokens);
  }
  if (max_new == 0) return 0;
  const int splits =
      attention_splits(static_cast<int64_t>(step.size()), max_new, max_total, kv_heads, gqa_ratio,
                       c.query_rows, c.multiprocessors, c.max_splits, c.min_split_keys);
  const AttentionKernelCost& k = splits == 1 ? c.unsplit : c.split;
  const int64_t per_tile = std::max(1, c.query_rows / gqa_ratio);
  const int64_t query_tiles = (max_new + per_tile - 1) / per_tile;
  std::vector<double> free_at(static_cast<size_t>(k.slots), 0.0);
  for (const AttentionSequence& s : step) {
    for (int split = 0; split < splits; ++split) {
      for (int64_t y = 0; y < query_tiles; ++y) {
        const int64_t tok0 = (query_tiles - 1 - y) * per_tile;
        double seconds = k.empty_block_s;  // a tile past the sequence's new tokens: the block exits
        if (tok0 < s.new_tokens) seconds = tile_seconds(c, k, gqa_ratio, s, splits, split, tok0);
        for (int head = 0; head < kv_heads; ++head) {
          auto slot = std::min_element(free_at.begin(), free_at.end());
          *slot += seconds;
        }
      }
    }
  }
  return k.launch_s + *std::max_element(free_at.begin(), free_at.end());
}

TEST(AttentionSplits, FollowsTheKernelsRule) {
  // Prefill of 4096 tokens, 8 KV heads, ratio 4: 32 tokens a tile, 128 tiles × 8 heads = 1024 blocks ≥ 264.
  EXPECT_EQ(attention_splits(1, 4096, 4096, 8, 4, 128, 132, 64, 256), 1);
  // Decode of one sequence over 32768 keys: 8 blocks; ceil(264 / 8) = 33 (32768 / 256 = 128 allowed).
  EXPECT_EQ(attention_splits(1, 1, 32768, 8, 4, 128, 132, 64, 256), 33);
  // 8 sequences @32K: 64 blocks, ceil(264 / 64) = 5.
  EXPECT_EQ(attention_splits(8, 1, 32769, 8, 4, 128, 132, 64, 256), 5);
  // Short context: no range under 256 keys (1000 / 256 = 3); under 256 keys, one range.
  EXPECT_EQ(attention_splits(1, 1, 1000, 8, 4, 128, 132, 64, 256), 3);
  EXPECT_EQ(attention_splits(1, 1, 100, 8, 4, 128, 132, 64, 256), 1);
  // One KV head, 132 multiprocessors: 264 wanted, clamped to max_splits.
  EXPECT_EQ(attention_splits(1, 1, 1 << 20, 1, 8, 128, 132, 64, 256), 64);
  // 64 query rows: 16 tokens a tile at ratio 4, so 8192 new tokens make 512 tiles, 2048 make 128
  // (ceil(264 / 128) = 3 splits).
  EXPECT_EQ(attention_splits(1, 8192, 8192, 1, 4, 64, 132, 64, 256), 1);
  EXPECT_EQ(attention_splits(1, 2048, 2048, 1, 4, 64, 132, 64, 256), 3);
}

TEST(AttentionLaunch, EmptyStepCostsNothing) {
  AttentionCosts c{
      .multiprocessors = 1, .unsplit = kernel(64, 2, 1.0, 1.0, 1.0), .split = kernel(64, 2, 1.0, 1.0, 1.0)};
  EXPECT_EQ(attention_launch_seconds(c, 8, 4, {}), 0.0);
}

TEST(AttentionLaunch, ThreeEqualBlocksOnTwoSlotsTakeTwoWaves) {
  // One decode over 100 keys (101 with its own), 3 KV heads, ratio 1: 3 blocks ≥ 2 × 1 multiprocessor, so
  // no split. Each block: 2 key tiles of 64 → 0.5 + 2 × 0.25 = 1 s; two slots run them in 2 waves.
  AttentionCosts c{.multiprocessors = 1,
                   .unsplit = kernel(64, 2, 0.125, 0.5, 0.25),
                   .split = kernel(64, 2, 100.0, 100.0, 100.0)};
  const std::vector<AttentionSequence> step{{100, 1}};
  EXPECT_DOUBLE_EQ(attention_launch_seconds(c, 3, 1, step), 0.125 + 2 * 1.0);
}

TEST(AttentionLaunch, DecodeOfEightAt32KRunsThreeWavesOfTheSplitKernel) {
  // 8 decodes over 32768 cached keys, 8 KV heads, ratio 4, 132 multiprocessors: 64 blocks → 5 splits.
  // 32769 keys = 513 tiles of 64; ranges of ceil(513 / 5) = 103 tiles (6592 keys): four of 103 tiles,
  // the last 32769 − 26368 = 6401 keys = 101 tiles. Per sequence: 32 blocks of b = 103 tiles, then 8 of
  // a = 101 tiles; 320 blocks on 132 slots. At 0: 108 b and 24 a start. At a the 24 free slots take 20 b
  // and 4 a; at b the 108 take 4 a, then 40 + 40 + 24 blocks: free at 2a (4), a + b (40), 2b (88). The
  // last 56 blocks (8 b, 8 a, 32 b, 8 a) land on 2a, a + b, then 12 on 2b: the makespan is 3b
  // (b + 2a, a + 2b < 3b). So the launch takes launch_s + 3 × (block_s + 103 × key_tile_s).
  AttentionCosts c{.multiprocessors = 132,
                   .unsplit = kernel(128, 132, 1e-3, 1e-3, 1e-3),
                   .split = kernel(64, 132, 5e-6, 1e-6, 2e-6)};
  const std::vector<AttentionSequence> step(8, AttentionSequence{32768, 1});
  EXPECT_DOUBLE_EQ(attention_launch_seconds(c, 8, 4, step), 5e-6 + 3 * (1e-6 + 103 * 2e-6));
  EXPECT_DOUBLE_EQ(attention_launch_seconds(c, 8, 4, step), reference_launch_seconds(c, 8, 4, step));
}

TEST(AttentionLaunch, CausalChunkStartsItsLastTileFirst) {
  // 6 new tokens, 1 KV head, ratio 1, 2 query rows: tiles of 2 tokens seeing 2, 4 and 6 keys, i.e. 1, 2
  // and 3 key tiles of 2 = 1, 2 and 3 s. Last first on 2 slots: 3 | 2, then 1 after the 2 → 3 s. In
  // first-tile order (1 | 2, then 3 after the 1) it would be 4 s.
  AttentionCosts c{.query_rows = 2,
                   .multiprocessors = 1,
                   .unsplit = kernel(2, 2, 0.0, 0.0, 1.0),
                   .split = kernel(2, 2, 100.0, 100.0, 100.0)};
  const std::vector<AttentionSequence> step{{0, 6}};
  EXPECT_DOUBLE_EQ(attention_launch_seconds(c, 1, 1, step), 3.0);
}

TEST(AttentionLaunch, DecodesBesideAChunkOnlyRunTheirFirstTile) {
  // A chunk of 4 tokens after 2 and a decode after 7, 1 KV head, ratio 1, 2 query rows: 2 query tiles.
  // Chunk: tile 1 sees 2 + 4 = 6 keys (3 tiles of 2), tile 0 sees 4 (2 tiles); the decode's tile 1 is
  // empty, its tile 0 sees 8 keys (4 tiles). Blocks of 3, 2, 4 s on 2 slots: 3 | 2, then 4 after the 2.
  AttentionCosts c{.query_rows = 2,
                   .multiprocessors = 1,
                   .unsplit = kernel(2, 2, 0.5, 0.0, 1.0),
                   .split = kernel(2, 2, 100.0, 100.0, 100.0)};
  const std::vector<AttentionSequence> step{{2, 4}, {7, 1}};
  EXPECT_DOUBLE_EQ(attention_launch_seconds(c, 1, 1, step), 0.5 + 6.0);
}

TEST(AttentionLaunch, ADecodeBesideAChunkPaysForTheGridsEmptyTiles) {
  // As above with empty_block_s = 0.25 and the decode first: its tile 1 (the grid's y = 0) exits at once,
  // 0.25 on slot 1; its tile 0 (4 s) on slot 2; the chunk's tile 1 (3 s) on slot 1 from 0.25, its tile 0
  // (2 s) on slot 1 from 3.25, ending at 5.25 (slot 2 ends at 4). With the chunk first: 3 | 2, the
  // decode's empty tile after the 2 (2.25), its tile 0 there too: 6.25, where without it 6.
  AttentionCosts c{.query_rows = 2,
                   .multiprocessors = 1,
                   .unsplit = kernel(2, 2, 0.5, 0.0, 1.0, 0.0, 0.25),
                   .split = kernel(2, 2, 100.0, 100.0, 100.0)};
  EXPECT_DOUBLE_EQ(attention_launch_seconds(c, 1, 1, std::vector<AttentionSequence>{{7, 1}, {2, 4}}),
                   0.5 + 5.25);
  EXPECT_DOUBLE_EQ(attention_launch_seconds(c, 1, 1, std::vector<AttentionSequence>{{2, 4}, {7, 1}}),
                   0.5 + 6.25);
  // A step of decodes alone has one query tile: no empty blocks. Two decodes after 3 (2 key tiles each).
  EXPECT_DOUBLE_EQ(attention_launch_seconds(c, 1, 1, std::vector<AttentionSequence>{{3, 1}, {3, 1}}),
                   0.5 + 2.0);
}

// A block pays per key tile for the row groups it uses: gqa_ratio rows for a decode, a tile's tokens ×
// gqa_ratio for a chunk. 128 rows, ratio 4: 32 tokens a tile.
TEST(AttentionLaunch, ABlockPaysForTheQueryRowsItUses) {
  AttentionCosts c{.query_rows = 128,
                   .multiprocessors = 1,
                   .max_splits = 1,
                   .min_split_keys = 256,
                   .unsplit = kernel(64, 1, 0, 1, 10, 2),
                   .split = kernel(64, 1, 0, 1, 10, 2)};
  // 32 new tokens after 96: one tile of 128 rows (8 groups) over 128 keys (2 key tiles): 1 + 2 × (10 + 16).
  EXPECT_DOUBLE_EQ(attention_launch_seconds(c, 1, 4, std::vector<AttentionSequence>{{96, 32}}), 53);
  // A decode after 127: 4 rows (1 group), 128 keys: 1 + 2 × (10 + 2).
  EXPECT_DOUBLE_EQ(attention_launch_seconds(c, 1, 4, std::vector<AttentionSequence>{{127, 1}}), 25);
  // 40 new tokens after 88: the last tile first, 8 tokens (32 rows, 2 groups) over 128 keys, 1 + 2 × 14;
  // then 32 tokens over 120 keys (2 key tiles), 53. One slot: 29 + 53.
  EXPECT_DOUBLE_EQ(attention_launch_seconds(c, 1, 4, std::vector<AttentionSequence>{{88, 40}}), 82);
}

TEST(AttentionLaunch, MatchesTheSlowReferenceOnRandomSteps) {
  std::mt19937_64 rng(20261201);
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  auto real = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  const int ratios[] = {1, 2, 4, 8, 16};
  for (int trial = 0; trial < 300; ++trial) {
    const int gqa = ratios[uniform(0, 4)];
    const int kv_heads = static_cast<int>(uniform(1, 16));
    AttentionCosts c{.query_rows = uniform(0, 1) == 0 ? 64 : 128,
                     .multiprocessors = static_cast<int>(uniform(1, 140)),
                     .max_splits = static_cast<int>(uniform(1, 64)),
                     .min_split_keys = static_cast<int>(uniform(1, 1024)),
                     .unsplit = kernel(static_cast<int>(uniform(16, 256)), static_cast<int>(uniform(1, 300)),
                                       real(0, 1e-5), real(0, 1e-5), real(1e-7, 1e-5), real(0, 1e-6),
                                       uniform(0, 1) == 0 ? 0 : real(0, 1e-6)),
                     .split = kernel(static_cast<int>(uniform(16, 128)), static_cast<int>(uniform(1, 300)),
                                     real(0, 1e-5), real(0, 1e-5), real(1e-7, 1e-5), real(0, 1e-6),
                                     uniform(0, 1) == 0 ? 0 : real(0, 1e-6))};
    std::vector<AttentionSequence> step;
    const int64_t chunks = uniform(0, 3);
    for (int64_t i = 0; i < chunks; ++i) step.push_back({uniform(0, 70000), uniform(1, 3000)});
    const int64_t decodes = uniform(chunks == 0 ? 1 : 0, uniform(0, 1) == 0 ? 8 : 200);
    const int64_t common = uniform(0, 40000);
    for (int64_t i = 0; i < decodes; ++i)
      step.push_back({uniform(0, 2) == 0 ? common : uniform(0, 40000), 1});
    const double expected = reference_launch_seconds(c, kv_heads, gqa, step);
    EXPECT_NEAR(attention_launch_seconds(c, kv_heads, gqa, step), expected, 1e-12 * expected)
        << "trial " << trial;
  }
}

}  // namespace
}  // namespace kvtier
