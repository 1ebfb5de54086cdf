#include "hw/tools/attention_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace kvtier::hw {
namespace {

constexpr double kLeastRatio = 0.01, kMostRatio = 1000, kRatioStep = 1.1;
constexpr int kRefineRounds = 40;

bool runs_split(const AttentionCosts& c, int kv_heads, int gqa_ratio, std::span<const AttentionSequence> step) {
  int64_t most_new = 0, most_total = 0;
  for (const AttentionSequence& s : step) {
    most_new = std::max(most_new, s.new_tokens);
    most_total = std::max(most_total, s.context_tokens + s.new_tokens);
  }
  return attention_splits(static_cast<int64_t>(step.size()), most_new, most_total, kv_heads, gqa_ratio, c.query_rows,
                          c.multiprocessors, c.max_splits, c.min_split_keys) > 1;
}

struct KernelFit {
  AttentionKernelCost cost;
  double squared_error = std::numeric_limits<double>::infinity();
};

// launch_s and key_tile_s >= 0 minimising the squared relative error of launch_s + key_tile_s × makespan,
// for makespans in key tiles (`units`) against measured `seconds`.
KernelFit fit_at_ratio(AttentionKernelCost kernel, double ratio, const std::vector<double>& units,
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
  kernel.launch_s = launch, kernel.block_s = ratio * tile, kernel.key_tile_s = tile;
  fit.cost = kernel;
  fit.squared_error = 0;
  for (size_t i = 0; i < units.size(); ++i) {
    const double e = (launch + tile * units[i]) / seconds[i] - 1;
    fit.squared_error += e * e;
  }
  return fit;
}

AttentionKernelCost fit_kernel(const AttentionCosts& tiling, bool split, int kv_heads, int gqa_ratio,
                               const std::vector<const AttentionSample*>& samples) {
  if (samples.size() < 2) {
    throw std::invalid_argument(std::string("attention fit: fewer than two timed launches of the ") +
                                (split ? "split" : "unsplit") + " kernel");
  }
  std::vector<double> seconds;
  for (const AttentionSample* s : samples) seconds.push_back(s->seconds);
  auto fit_ratio = [&](double ratio) {
    AttentionCosts unit = tiling;
    AttentionKernelCost& kernel = split ? unit.split : unit.unsplit;
    kernel.launch_s = 0, kernel.block_s = ratio, kernel.key_tile_s = 1;
    std::vector<double> units;
    for (const AttentionSample* s : samples)
      units.push_back(attention_launch_seconds(unit, kv_heads, gqa_ratio, s->sequences));
    return fit_at_ratio(kernel, ratio, units, seconds);
  };
  KernelFit best;
  double best_ratio = kLeastRatio;
  for (double ratio = kLeastRatio; ratio <= kMostRatio; ratio *= kRatioStep) {
    const KernelFit fit = fit_ratio(ratio);
    if (fit.squared_error < best.squared_error) best = fit, best_ratio = ratio;
  }
  // Golden-section search on log(ratio) between the best point's neighbours on the grid.
  double low = std::log(best_ratio / kRatioStep), high = std::log(best_ratio * kRatioStep);
  const double golden = (std::sqrt(5.0) - 1) / 2;
  for (int round = 0; round < kRefineRounds; ++round) {
    const double a = high - golden * (high - low), b = low + golden * (high - low);
    if (fit_ratio(std::exp(a)).squared_error < fit_ratio(std::exp(b)).squared_error) {
      high = b;
    } else {
      low = a;
    }
  }
  const KernelFit refined = fit_ratio(std::exp((low + high) / 2));
  if (refined.squared_error < best.squared_error) best = refined;
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
    (runs_split(tiling, kv_heads, gqa_ratio, s.sequences) ? split : unsplit).push_back(&s);
  }
  AttentionCosts fitted = tiling;
  fitted.unsplit = fit_kernel(tiling, false, kv_heads, gqa_ratio, unsplit);
  fitted.split = fit_kernel(tiling, true, kv_heads, gqa_ratio, split);
  return fitted;
}

}  // namespace kvtier::hw
