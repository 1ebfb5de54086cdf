// The attention cost model's kernel costs (sim/core/attention_cost.h) fitted to launches timed alone.
//
// kvtier-hw calibrate --steps times each probe step's attention by itself (every layer's launch,
// TransformerForward::attention). A launch runs the unsplit kernel or the split one (attention_splits
// decides), so each kernel is fitted to its own launches: its time is launch_s + makespan(block_s,
// key_tile_s, row_group_tile_s, empty_block_s), and the makespan of a greedy schedule scales with its
// four costs together (twice each, twice the makespan) while its shape depends only on their ratios. So
// for each pair of ratios block_s / key_tile_s (0.01 to 1000, 1.25x apart) and row_group_tile_s /
// key_tile_s (0, then 0.001 to 10, 1.25x apart) the fit solves non-negative least squares on the relative
// error for launch_s and key_tile_s; where launches have blocks past their sequence's query tiles, it then
// tries empty_block_s / key_tile_s from 0.01 to 2 (1.5x apart) near the best pair; golden-section searches
// refine each ratio of the best between its grid neighbours. CPU-only, so CI tests it.
#pragma once

#include <span>
#include <vector>

#include "sim/core/attention_cost.h"

namespace kvtier::hw {

// One timed launch: one layer's attention over `sequences`, in the order the step gave them.
struct AttentionSample {
  std::vector<AttentionSequence> sequences;
  double seconds = 0;
};

// `tiling` with both kernels' launch_s, block_s, key_tile_s and row_group_tile_s fitted. Throws
// std::invalid_argument when a time is not positive or a kernel has fewer than three launches to fit.
AttentionCosts fit_attention_costs(const AttentionCosts& tiling, int kv_heads, int gqa_ratio,
                                   std::span<const AttentionSample> samples);

}  // namespace kvtier::hw
