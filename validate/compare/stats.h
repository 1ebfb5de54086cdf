// The statistics a validation reports: percentiles as the simulator's summary computes them (linear
// interpolation between closest ranks, numpy's default: sim/engine/metrics.h), here without SimGrid.
#pragma once

#include <vector>

namespace kvtier::validation {

// REQUIRES: `sorted` is non-empty and sorted ascending; 0 <= q <= 1.
double percentile_of_sorted(const std::vector<double>& sorted, double q);
// REQUIRES: `values` is non-empty; 0 <= q <= 1.
double percentile(std::vector<double> values, double q);

// (predicted - measured) / measured.
inline double relative_error(double predicted, double measured) {
  return (predicted - measured) / measured;
}

}  // namespace kvtier::validation
