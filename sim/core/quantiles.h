// Percentiles as every kvtier summary computes them: linear interpolation between closest ranks (numpy's
// default), so that the simulator, the hardware mode and `kvtier validate` read one definition.
//
// LatencyQuantiles gives them for a run's latencies in memory that does not grow with the run: exact while
// it holds at most `exact_limit` values, and from then on from a logarithmic sketch (DDSketch: Masson, Rim
// and Lee, "DDSketch: a fast and fully-mergeable quantile sketch with relative-error guarantees", VLDB 2019)
// with buckets (gamma^(i-1), gamma^i], gamma = (1 + a) / (1 - a). A bucket's values are all within a
// relative error a of its estimate 2 gamma^i / (gamma + 1), so the sketched percentile, interpolated between
// the estimates of the same two ranks, is within a relative error a of the exact one. Values at or below
// kSketchFloor (1e-12) are counted as 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvtier {

// REQUIRES: `sorted` is non-empty and sorted ascending; 0 <= q <= 1.
double percentile_of_sorted(const std::vector<double>& sorted, double q);
// REQUIRES: `values` is non-empty; 0 <= q <= 1.
double percentile(std::vector<double> values, double q);

class LatencyQuantiles {
 public:
  static constexpr size_t kExactLimit = size_t{1} << 20;  // 8 MiB of values
  static constexpr double kRelativeError = 0.001;
  static constexpr double kSketchFloor = 1e-12;

  explicit LatencyQuantiles(size_t exact_limit = kExactLimit);

  // REQUIRES: value >= 0.
  void add(double value);
  int64_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  bool exact() const { return !sketched_; }
  // The sum of the values in the order they were added, over their count.
  double mean() const;
  // REQUIRES: !empty(); 0 <= q <= 1. Sorts the exact values the first time.
  double percentile(double q);

 private:
  void start_sketch();
  void add_to_sketch(double value);
  double estimate_at_rank(int64_t rank) const;

  size_t exact_limit_;
  int64_t count_ = 0;
  double sum_ = 0;
  std::vector<double> values_;  // while exact
  bool sorted_ = false;
  bool sketched_ = false;
  double log_gamma_ = 0;
  int64_t zeros_ = 0;             // values at or below kSketchFloor
  std::vector<int64_t> buckets_;  // buckets_[k] counts bucket index first_bucket_ + k
  int first_bucket_ = 0;
};

}  // namespace kvtier
