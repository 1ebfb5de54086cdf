#include "hw/tools/attention_fit.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

std::vector<double> block_grid() {
  std::vector<double> grid;
  for (double r = kLeastRatio; r <= kMostRatio; r *= kRatioStep) grid.push_back(r);
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

// The search over one kernel's ratios, keeping the best fit seen; `fit` prices the launches at ratios.
class RatioSearch {
 public:
  explicit RatioSearch(std::function<KernelFit(Ratios)> fit) : fit_(std::move(fit)) {}

  // Every pair of block and row-group ratios on the grid, without empty blocks.
  void grid() {
    for (double block : blocks_) {
      for (double row_group : row_groups_) consider({block, row_group, 0});
    }
  }

  // At each empty-block ratio, the other two within kEmptyNeighbourhood grid steps of the best so far.
  void empty_blocks() {
    const auto [block_low, block_high] = near(blocks_, at_.block);
    const auto [group_low, group_high] = near(row_groups_, at_.row_group);
    for (double empty = kLeastEmptyRatio; empty <= kMostEmptyRatio; empty *= kEmptyRatioStep) {
      for (ptrdiff_t b = block_low; b < block_high; ++b) {
        for (ptrdiff_t g = group_low; g < group_high; ++g) consider({blocks_[b], row_groups_[g], empty});
      }
    }
  }

  // Each ratio in turn refined between its neighbours on the grid (those the grid chose 0 stay 0).
  void refine() {
    for (int pass = 0; pass < kRefinePasses; ++pass) {
      refine_ratio(&Ratios::block, kRatioStep);
      if (at_.row_group > 0) refine_ratio(&Ratios::row_group, kRowGroupRatioStep);
      if (at_.empty > 0) refine_ratio(&Ratios::empty, kEmptyRatioStep);
      const KernelFit refined = fit_(at_);
      if (refined.squared_error < best_.squared_error) best_ = refined;
    }
  }

  const KernelFit& best() const { return best_; }

 private:
  void consider(Ratios ratios) {
    const KernelFit f = fit_(ratios);
    if (f.squared_error < best_.squared_error) best_ = f, at_ = ratios;
  }

  void refine_ratio(double Ratios::*ratio, double step) {
    Ratios trial = at_;
    at_.*ratio = golden_section(std::log(at_.*ratio / step), std::log(at_.*ratio * step), [&](double value) {
      trial.*ratio = value;
      return fit_(trial).squared_error;
    });
  }

  // The index range of `grid` within kEmptyNeighbourhood steps of `value`.
  static std::pair<ptrdiff_t, ptrdiff_t> near(const std::vector<double>& grid, double value) {
    const ptrdiff_t i = std::lower_bound(grid.begin(), grid.end(), value) - grid.begin();
    return {std::max<ptrdiff_t>(0, i - kEmptyNeighbourhood),
            std::min<ptrdiff_t>(std::ssize(grid), i + kEmptyNeighbourhood + 1)};
  }

  std::function<KernelFit(Ratios)> fit_;
  const std::vector<double> blocks_ = block_grid();
  const std::vector<double> row_groups_ = row_group_grid();
  KernelFit best_;
  Ratios at_;
};

AttentionKernelCost fit_kernel(const AttentionCosts& tiling, bool split, int kv_heads, int gqa_ratio,
                               const std::vector<const AttentionSample*>& samples) {
  if (samples.size() < 3) {
    throw std::invalid_argument(std::string("attention fit: fewer than three timed launches of the ") +
                                (split ? "split" : "unsplit") + " kernel");
  }
  std::vector<double> seconds;
  for (const AttentionSample* s : samples) seconds.push_back(s->seconds);
  RatioSearch search([&](Ratios ratios) {
    AttentionCosts unit = tiling;
    AttentionKernelCost& kernel = split ? unit.split : unit.unsplit;
    kernel.launch_s = 0, kernel.block_s = ratios.block, kernel.key_tile_s = 1;
    kernel.row_group_tile_s = ratios.row_group, kernel.empty_block_s = ratios.empty;
    std::vector<double> units;
    for (const AttentionSample* s : samples)
      units.push_back(attention_launch_seconds(unit, kv_heads, gqa_ratio, s->sequences));
    return fit_at_ratios(kernel, ratios, units, seconds);
  });
  search.grid();
  // Only launches that mix sequences of different lengths have empty blocks to price.
  if (std::any_of(samples.begin(), samples.end(),
                  [&](const AttentionSample* s) { return has_empty_blocks(tiling, gqa_ratio, *s); }))
    search.empty_blocks();
  search.refine();
  if (!std::isfinite(search.best().squared_error))
    throw std::invalid_argument("attention fit: the launches do not determine the kernel's costs");
  return search.best().cost;
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
