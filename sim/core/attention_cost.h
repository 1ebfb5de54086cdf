// What one layer's paged attention costs, priced from how the kernel cuts its work into blocks.
//
// kvtier-hw's paged attention runs a whole step (prefill chunks and decodes together) as one launch per
// layer. A block of the launch owns one KV head and one tile of `query_rows` query rows: the queries of
// query_rows / gqa_ratio consecutive new tokens of one sequence, for every query head sharing that KV head.
// It walks the keys that tile may see (causal: the sequence's context plus the new tokens up to the tile's
// last) in key tiles. When the step has too few blocks to fill the GPU (decode: one token per sequence),
// each sequence's keys are split into ranges handled by separate blocks, and a second, slower kernel does
// the splits (attention_splits below: the one rule, shared with hw/model/attention_plan.h).
//
// A block's time is block_s + (its key tiles) × (key_tile_s + row_group_tile_s × its row groups), a row
// group being kAttentionRowGroup query rows in use (a warp's share of the matrix instructions: a decode's
// block uses gqa_ratio rows of its tile, a prefill's all of them, and on the mma.sync kernel only warps
// with rows do the work). The grid gives every sequence as many query tiles as the step's longest has, so
// a shorter sequence's tiles past its own (all but one for a decode beside a chunk) are blocks that exit
// at once: each takes empty_block_s. Blocks start in launch order on the first free one of `slots` places
// (multiprocessors × blocks resident on each). The launch takes launch_s plus the time its last block
// ends. Measured on an H200 this describes what one rate cannot: the attention of a decode of
// 8 sequences at 32K tokens runs in three waves of 320 blocks over 132 multiprocessors, and takes 62 % of
// the time of 32 sequences at 16K, which read twice the bytes. docs/cost-model.md derives it;
// kvtier-hw calibrate fits the costs to attention launches it times alone (hw/tools/step_fit.h).
#pragma once

#include <cstdint>
#include <span>

namespace kvtier {

// One sequence of a step as attention sees it: `new_tokens` queries after `context_tokens` cached keys.
// A decode is one new token after its context.
struct AttentionSequence {
  int64_t context_tokens = 0;
  int64_t new_tokens = 0;
};

// One of the two kernels: its tiling and its fitted costs.
struct AttentionKernelCost {
  int key_tile = 0;         // keys a block takes per step of its loop
  int slots = 0;            // blocks resident on the whole GPU at once
  double launch_s = 0;      // fixed time of a launch (with the split kernel: its combine kernel too)
  double block_s = 0;       // fixed time of one block
  double key_tile_s = 0;    // time of one key tile in a block
  double row_group_tile_s = 0;  // and of one key tile per row group the block uses
  double empty_block_s = 0;     // time of a block past its sequence's query tiles, which exits at once
};

inline constexpr int kAttentionRowGroup = 16;  // query rows of a row group

struct AttentionCosts {
  int query_rows = 128;       // query rows of a block (tokens × query heads of one KV head)
  int multiprocessors = 0;    // of the GPU, for the split rule
  int max_splits = 64;        // the split rule's bounds: at most this many ranges per sequence,
  int min_split_keys = 256;   // none shorter than this many keys
  AttentionKernelCost unsplit;  // splits == 1
  AttentionKernelCost split;    // splits > 1
};

// Key ranges per sequence for a launch of `sequences` sequences, the longest with `max_new_tokens` new
// tokens and the longest `max_total_tokens` keys: 1 when the unsplit grid already gives every
// multiprocessor two blocks, else enough to do so, within [1, max_splits] and no range shorter than
// min_split_keys.
int attention_splits(int64_t sequences, int64_t max_new_tokens, int64_t max_total_tokens, int kv_heads,
                     int gqa_ratio, int query_rows, int multiprocessors, int max_splits, int min_split_keys);

// attention_splits for a launch over `step` (every sequence of the step); 1 for an empty step.
int attention_launch_splits(const AttentionCosts& costs, int kv_heads, int gqa_ratio,
                            std::span<const AttentionSequence> step);

// Seconds of one layer's attention over `step` (every sequence of the step, in the scheduler's order).
// 0 for an empty step.
double attention_launch_seconds(const AttentionCosts& costs, int kv_heads, int gqa_ratio,
                                std::span<const AttentionSequence> step);

}  // namespace kvtier
