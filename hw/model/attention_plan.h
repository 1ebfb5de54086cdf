// How the paged attention kernel cuts its work, as plain arithmetic the CPU tests can check.
//
// A block of the kernel owns one KV head and a tile of kAttentionRows query rows: the queries of
// tokens_per_tile consecutive tokens for all heads of the KV head's group (row = token * ratio + head in
// group), so that each K/V tile read from the pages serves every query head that shares it (GQA). When
// the step has too few such blocks to fill the GPU (decode: one token per sequence), the keys of each
// sequence are split into `splits` ranges handled by separate blocks, whose partial results a second
// kernel combines (flash-decoding).
#pragma once

#include <algorithm>
#include <cstdint>

#include "hw/kernels/quant_math.h"  // KVTIER_HD
#include "sim/core/attention_cost.h"

namespace kvtier::hw {

inline constexpr int kAttentionRows = 128;  // query rows of a block by default (8 warps of 16); 64 also built
inline constexpr int kAttentionKeys = 64;   // keys of one K/V tile
inline constexpr int kAttentionMaxSplits = 64;
inline constexpr int kAttentionMinSplitKeys = 4 * kAttentionKeys;  // the shortest key range of a split

inline int attention_tokens_per_tile(int gqa_ratio, int rows = kAttentionRows) { return std::max(1, rows / gqa_ratio); }

inline int attention_query_tiles(int max_new_tokens, int gqa_ratio, int rows = kAttentionRows) {
  const int per_tile = attention_tokens_per_tile(gqa_ratio, rows);
  return (max_new_tokens + per_tile - 1) / per_tile;
}

// Key ranges per sequence: 1 when the unsplit grid already gives every multiprocessor two blocks, else
// enough to do so, but no range shorter than four key tiles. The rule is the simulator's
// (sim/core/attention_cost.h), so that its attention model cuts a step as this kernel does.
inline int attention_splits(int sequences, int max_new_tokens, int max_total_tokens, int kv_heads,
                            int gqa_ratio, int multiprocessors, int rows = kAttentionRows) {
  return kvtier::attention_splits(sequences, max_new_tokens, max_total_tokens, kv_heads, gqa_ratio, rows,
                                  multiprocessors, kAttentionMaxSplits, kAttentionMinSplitKeys);
}

// Keys [begin, end) of split `split` of a sequence of `total_tokens` keys: ranges of a whole number of
// key tiles, the same for every query tile of the sequence (a query tile clips it to its causal bound).
KVTIER_HD int attention_split_begin(int total_tokens, int splits, int split) {
  const int tiles = (total_tokens + kAttentionKeys - 1) / kAttentionKeys;
  return (tiles + splits - 1) / splits * kAttentionKeys * split;
}

// Floats of scratch the kernel needs for `splits` > 1: a partial output and a log-sum-exp per split,
// token and head.
inline int64_t attention_workspace_floats(int total_new_tokens, int heads, int head_dim, int splits) {
  return splits <= 1 ? 0 : int64_t{splits} * total_new_tokens * heads * (head_dim + 1);
}

}  // namespace kvtier::hw
