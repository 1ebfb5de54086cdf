#include "hw/tools/attention_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace kvtier::hw {
namespace {

constexpr double kLeastRatio = 0.01, kMostRatio = 1000, kRatioStep = 1.25;  // block_s / key_tile_s
constexpr double kLeastRowGroupRatio = 1e-3, kMostRowGroupRatio = 10, kRowGroupRatioStep = 1.25;
// empty_block_s / key_tile_s, and how many grid steps of the other two ratios are searched at each.
constexpr double kLeastEmptyRatio = 0.01, kMostEmptyRatio = 2, kEmptyRatioStep = 1.5;
constexpr int kEmptyNeighbourhood = 4;
constexpr int kRefineRounds = 40, kRefinePasses = 3;

struct KernelFit {
  AttentionKernelCost cost;
  double squared_error = std::numeric_limits<double>::infinity();
};

// The ratios a schedule's shape depends on: block_s, row_group_tile_s and empty_block_s over key_tile_s.
struct Ratios {
  double block = 0;
  double row_group = 0;
  double empty = 0;
};

// launch_s and key_tile_s >= 0 minimising the squared relative error of launch_s + key_tile_s × makespan,
// for makespans in key-tile times (`units`, at key_tile_s = 1) against measured `seconds`.
KernelFit fit_at_ratios(AttentionKernelCost kernel, Ratios ratios, const std::vector<double>& units,
                        const std::vector<double>& seconds) {
  double s11 = 0, s12 = 0, s22 = 0, b1 = 0, b2 = 0;
  for (size_t i = 0; i < units.size(); ++i) {
    const double a = 1 / seconds[i], m = units[i] / seconds[i];
    s11 += a * a, s12 += a * m, s22 += m * m, b1 += a, b2 += m;
  }
  const double det = s11 * s22 - s12 * s12;
  double launch = det > 0 ? (b1 * s22 - b2 * s12) / det : -1;
  double tile = det > 0 ? (s11 * b2 - s12 * b1) / det : -1;
  if (launch < 0 || tile <= 0) launch = 0, tile = b2 / s22;  // the best fit with no fixed launch time
  KernelFit fit;
  if (!(tile > 0)) return fit;
  kernel.launch_s = launch, kernel.key_tile_s = tile;
  kernel.block_s = ratios.block * tile, kernel.row_group_tile_s = ratios.row_group * tile;
  kernel.empty_block_s = ratios.empty * tile;
  fit.cost = kernel;
  fit.squared_error = 0;
  for (size_t i = 0; i < units.size(); ++i) {
    const double e = (launch + tile * units[i]) / seconds[i] - 1;
    fit.squared_error += e * e;
  }
  return fit;
}

// The minimum of `error` over log(x) in [low, high] by golden-section search.
template <typename Error>
double golden_section(double low, double high, Error error) {
  const double golden = (std::sqrt(5.0) - 1) / 2;
  for (int round = 0; round < kRefineRounds; ++round) {
    const double a = high - golden * (high - low), b = low + golden * (high - low);
    if (error(std::exp(a)) < error(std::exp(b))) {
      high = b;
    } else {
      low = a;
    }
  }
  return std::exp((low + high) / 2);
}

// The grid of row_group_tile_s / key_tile_s: 0, then kLeastRowGroupRatio to kMostRowGroupRatio.
std::vector<double> row_group_grid() {
  std::vector<double> grid{0};
  for (double r = kLeastRowGroupRatio; r <= kMostRowGroupRatio; r *= kRowGroupRatioStep) grid.push_back(r);
  return grid;
}

// Whether the launch's grid has blocks past a sequence's own query tiles (sequences of unequal tiles).
bool has_empty_blocks(const AttentionCosts& tiling, int gqa_ratio, const AttentionSample& sample) {
  const int64_t per_tile = std::max(1, tiling.query_rows / gqa_ratio);
  int64_t most = 0, least = std::numeric_limits<int64_t>::max();
  for (const AttentionSequence& s : sample.sequences) {
    const int64_t tiles = (s.new_tokens + per_tile - 1) / per_tile;
    most = std::max(most, tiles), least = std::min(least, tiles);
  }
  return most > least;
}

AttentionKernelCost fit_kernel(const AttentionCosts& tiling, bool split, int kv_heads, int gqa_ratio,
                               const std::vector<const AttentionSample*>& samples) {
  if (samples.size() < 3) {
    throw std::invalid_argument(std::string("attention fit: fewer than three timed launches of the ") +
                                (split ? "split" : "unsplit") + " kernel");
  }
  std::vector<double> seconds;
  for (const AttentionSample* s : samples) seconds.push_back(s->seconds);
  auto fit = [&](Ratios ratios) {
    AttentionCosts unit = tiling;
    AttentionKernelCost& kernel = split ? unit.split : unit.unsplit;
    kernel.launch_s = 0, kernel.block_s = ratios.block, kernel.key_tile_s = 1;
    kernel.row_group_tile_s = ratios.row_group, kernel.empty_block_s = ratios.empty;
    std::vector<double> units;
    for (const AttentionSample* s : samples)
      units.push_back(attention_launch_seconds(unit, kv_heads, gqa_ratio, s->sequences));
    return fit_at_ratios(kernel, ratios, units, seconds);
  };
  KernelFit best;
  Ratios at;
  auto try_ratios = [&](Ratios ratios) {
    const KernelFit f = fit(ratios);
    if (f.squared_error < best.squared_error) best = f, at = ratios;
  };
  const std::vector<double> row_groups = row_group_grid();
  std::vector<double> blocks;
  for (double block = kLeastRatio; block <= kMostRatio; block *= kRatioStep) blocks.push_back(block);
  for (double block : blocks) {
    for (double row_group : row_groups) try_ratios({block, row_group, 0});
  }
  // Blocks past their sequence's tiles: only launches that mix sequences of different lengths have them.
  // At each of their ratios, the other two are searched near the best pair without them.
  if (std::any_of(samples.begin(), samples.end(),
                  [&](const AttentionSample* s) { return has_empty_blocks(tiling, gqa_ratio, *s); })) {
    const Ratios base = at;
    const auto near = [&](const std::vector<double>& grid, double value) {
      const auto i = std::lower_bound(grid.begin(), grid.end(), value) - grid.begin();
      return std::pair{std::max<ptrdiff_t>(0, i - kEmptyNeighbourhood),
                       std::min<ptrdiff_t>(std::ssize(grid), i + kEmptyNeighbourhood + 1)};
    };
    const auto [block_low, block_high] = near(blocks, base.block);
    const auto [group_low, group_high] = near(row_groups, base.row_group);
    for (double empty = kLeastEmptyRatio; empty <= kMostEmptyRatio; empty *= kEmptyRatioStep) {
      for (ptrdiff_t b = block_low; b < block_high; ++b) {
        for (ptrdiff_t g = group_low; g < group_high; ++g) try_ratios({blocks[b], row_groups[g], empty});
      }
    }
  }
  // Refine each ratio in turn between its neighbours on the grid.
  for (int pass = 0; pass < kRefinePasses; ++pass) {
    at.block =
        golden_section(std::log(at.block / kRatioStep), std::log(at.block * kRatioStep), [&](double block) {
          return fit({block, at.row_group, at.empty}).squared_error;
        });
    if (at.row_group > 0) {
      at.row_group = golden_section(std::log(at.row_group / kRowGroupRatioStep),
                                    std::log(at.row_group * kRowGroupRatioStep), [&](double row_group) {
                                      return fit({at.block, row_group, at.empty}).squared_error;
                                    });
    }
    if (at.empty > 0) {
      at.empty = golden_section(std::log(at.empty / kEmptyRatioStep), std::log(at.empty * kEmptyRatioStep),
                                [&](double empty) {
                                  return fit({at.block, at.row_group, empty}).squared_error;
                                });
    }
    const KernelFit refined = fit(at);
    if (refined.squared_error < best.squared_error) best = refined;
  }
  if (!std::isfinite(best.squared_error))
    throw std::invalid_argument("attention fit: the launches do not determine the kernel's costs");
  return best.cost;
}

}  // namespace

AttentionCosts fit_attention_costs(const AttentionCosts& tiling, int kv_heads, int gqa_ratio,
                                   std::span<const AttentionSample> samples) {
  std::vector<const AttentionSample*> unsplit, split;
  for (const AttentionSample& s : samples) {
    if (!(std::isfinite(s.seconds) && s.seconds > 0))
      throw std::invalid_argument("attention fit: a timed launch is not a positive number of seconds");
    (attention_launch_splits(tiling, kv_heads, gqa_ratio, s.sequences) > 1 ? split : unsplit).push_back(&s);
  }
  AttentionCosts fitted = tiling;
  fitted.unsplit = fit_kernel(tiling, false, kv_heads, gqa_ratio, unsplit);
  fitted.split = fit_kernel(tiling, true, kv_heads, gqa_ratio, split);
  return fitted;
}

}  // namespace kvtier::hw
