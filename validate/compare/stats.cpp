#include "validate/compare/stats.h"

#include <algorithm>
#include <cmath>

namespace kvtier::validation {

double percentile_of_sorted(const std::vector<double>& sorted, double q) {
  double rank = q * static_cast<double>(sorted.size() - 1);
  size_t low = static_cast<size_t>(std::floor(rank));
  size_t high = std::min(low + 1, sorted.size() - 1);
  return sorted[low] + (rank - static_cast<double>(low)) * (sorted[high] - sorted[low]);
}

double percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return percentile_of_sorted(values, q);
}

}  // namespace kvtier::validation
