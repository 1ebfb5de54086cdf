// The attention cost model's kernel costs (sim/core/attention_cost.h) fitted to launches timed alone.
//
// kvtier-hw calibrate --steps times each probe step's attention by itself (every layer's launch,
// TransformerForward::attention). A launch runs the unsplit kernel or the split one (attention_splits
// decides), so each kernel is fitted to its own launches: its time is launch_s + makespan(block_s,
// key_tile_s), and the makespan of a greedy schedule scales with its two costs together (twice both, twice
// the makespan) while its shape depends only on their ratio. So for each ratio block_s / key_tile_s on a
// grid (0.01 to 1000 key tiles, 1.1x apart) the fit solves non-negative least squares on the relative
// error for launch_s and key_tile_s; a golden-section search then refines the ratio between the best
// point's neighbours. CPU-only, so CI tests it.
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

// `tiling` with both kernels' launch_s, block_s and key_tile_s fitted. Throws std::invalid_argument when a
// time is not positive or a kernel has fewer than two launches to fit.
AttentionCosts fit_attention_costs(const AttentionCosts& tiling, int kv_heads, int gqa_ratio,
                                   std::span<const AttentionSample> samples);

}  // namespace kvtier::hw
