#include "hw/tools/attention_fit.h"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>

#include "hw/tools/step_fit.h"

namespace kvtier::hw {
namespace {

// Llama-3.1-8B's attention on an H200: 8 KV heads of 4 query heads, 132 multiprocessors, one block of
// either kernel resident on each.
constexpr int kKvHeads = 8, kGqaRatio = 4;

AttentionCosts h200_tiling() {
  return {.query_rows = 128,
          .multiprocessors = 132,
          .max_splits = 64,
          .min_split_keys = 256,
          .unsplit = {.key_tile = 128, .slots = 132},
          .split = {.key_tile = 64, .slots = 132}};
}

AttentionCosts truth() {
  AttentionCosts c = h200_tiling();
  c.unsplit.launch_s = 6e-6, c.unsplit.block_s = 3e-6, c.unsplit.key_tile_s = 2.2e-6;
  c.split.launch_s = 11e-6, c.split.block_s = 1.5e-6, c.split.key_tile_s = 2.0e-6;
  c.split.row_group_tile_s = 0.15e-6;  // the mma.sync kernel: only warps with query rows work
  return c;
}

// One launch per probe step, timed as if the kernel ran the model with `costs`, each off by up to `noise`.
std::vector<AttentionSample> synthetic_launches(double noise, const AttentionCosts& costs = truth()) {
  std::mt19937 random(11);
  std::uniform_real_distribution<double> error(-noise, noise);
  std::vector<AttentionSample> launches;
  for (const StepSample& step : probe_steps(640 * 1024)) {
    AttentionSample launch{.sequences = step.attention_sequences()};
    launch.seconds =
        attention_launch_seconds(costs, kKvHeads, kGqaRatio, launch.sequences) * (1 + error(random));
    launches.push_back(std::move(launch));
  }
  return launches;
}

void expect_kernel_near(const AttentionKernelCost& fitted, const AttentionKernelCost& expected, double relative) {
  EXPECT_EQ(fitted.key_tile, expected.key_tile);
  EXPECT_EQ(fitted.slots, expected.slots);
  EXPECT_NEAR(fitted.launch_s, expected.launch_s, relative * expected.launch_s + 1e-9);
  EXPECT_NEAR(fitted.block_s / expected.block_s, 1, relative);
  EXPECT_NEAR(fitted.key_tile_s / expected.key_tile_s, 1, relative);
  EXPECT_NEAR(fitted.row_group_tile_s, expected.row_group_tile_s, relative * expected.key_tile_s);
  EXPECT_NEAR(fitted.empty_block_s, expected.empty_block_s, relative * expected.key_tile_s);
}

TEST(AttentionFit, TheProbeStepsRunBothKernels) {
  int split = 0;
  for (const StepSample& step : probe_steps(640 * 1024))
    split += attention_launch_splits(h200_tiling(), kKvHeads, kGqaRatio, step.attention_sequences()) > 1;
  // Decodes of up to 32 sequences (8 KV heads each: fewer than 264 blocks) leave the GPU short of blocks.
  EXPECT_GE(split, 8);
  EXPECT_GE(static_cast<int>(probe_steps(640 * 1024).size()) - split, 8);
}

TEST(AttentionFit, RecoversExactCostsFromExactTimes) {
  const AttentionCosts fitted = fit_attention_costs(h200_tiling(), kKvHeads, kGqaRatio, synthetic_launches(0));
  expect_kernel_near(fitted.unsplit, truth().unsplit, 1e-4);
  expect_kernel_near(fitted.split, truth().split, 1e-4);
  EXPECT_EQ(fitted.multiprocessors, 132);
}

// The probe's mixed steps (a chunk beside decodes) give the unsplit kernel blocks past the decodes' one
// query tile; the split kernel's launches (decodes alone) have none, so its cost stays 0.
TEST(AttentionFit, RecoversWhatABlockPastItsSequencesTilesCosts) {
  AttentionCosts costs = truth();
  costs.unsplit.empty_block_s = 0.4e-6;
  const AttentionCosts fitted =
      fit_attention_costs(h200_tiling(), kKvHeads, kGqaRatio, synthetic_launches(0, costs));
  expect_kernel_near(fitted.unsplit, costs.unsplit, 1e-3);
  expect_kernel_near(fitted.split, costs.split, 1e-4);
}

TEST(AttentionFit, PredictsEachLaunchThroughAPercentOfNoise) {
  const std::vector<AttentionSample> launches = synthetic_launches(0.01);
  const AttentionCosts fitted = fit_attention_costs(h200_tiling(), kKvHeads, kGqaRatio, launches);
  for (const AttentionSample& launch : launches) {
    const double exact = attention_launch_seconds(truth(), kKvHeads, kGqaRatio, launch.sequences);
    EXPECT_NEAR(attention_launch_seconds(fitted, kKvHeads, kGqaRatio, launch.sequences) / exact, 1, 0.03);
  }
}

TEST(AttentionFit, RefusesWhatCannotDetermineAKernel) {
  std::vector<AttentionSample> launches = synthetic_launches(0);
  std::vector<AttentionSample> prefill_only;  // chunks of 2K or more fill the GPU: no split launch to fit
  for (const AttentionSample& l : launches) {
    if (l.sequences.size() == 1 && l.sequences[0].new_tokens >= 2048) prefill_only.push_back(l);  // unsplit
  }
  EXPECT_THROW(fit_attention_costs(h200_tiling(), kKvHeads, kGqaRatio, prefill_only), std::invalid_argument);
  launches[3].seconds = 0;
  EXPECT_THROW(fit_attention_costs(h200_tiling(), kKvHeads, kGqaRatio, launches), std::invalid_argument);
}

}  // namespace
}  // namespace kvtier::hw
