#include "sim/core/quantiles.h"

#include <algorithm>
#include <cmath>

namespace kvtier {
namespace {

constexpr double kGamma = (1 + LatencyQuantiles::kRelativeError) / (1 - LatencyQuantiles::kRelativeError);

}  // namespace

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

LatencyQuantiles::LatencyQuantiles(size_t exact_limit) : exact_limit_(exact_limit) {}

void LatencyQuantiles::add(double value) {
  ++count_;
  sum_ += value;
  if (sketched_) return add_to_sketch(value);
  values_.push_back(value);
  sorted_ = false;
  if (values_.size() > exact_limit_) start_sketch();
}

double LatencyQuantiles::mean() const {
  return count_ > 0 ? sum_ / static_cast<double>(count_) : 0;
}

void LatencyQuantiles::start_sketch() {
  sketched_ = true;
  log_gamma_ = std::log(kGamma);
  for (double v : values_) add_to_sketch(v);
  std::vector<double>().swap(values_);
}

void LatencyQuantiles::add_to_sketch(double value) {
  if (value <= kSketchFloor) {
    ++zeros_;
    return;
  }
  const int index = static_cast<int>(std::ceil(std::log(value) / log_gamma_));
  if (buckets_.empty()) first_bucket_ = index;
  if (index < first_bucket_) {
    buckets_.insert(buckets_.begin(), static_cast<size_t>(first_bucket_ - index), 0);
    first_bucket_ = index;
  }
  const size_t k = static_cast<size_t>(index - first_bucket_);
  if (k >= buckets_.size()) buckets_.resize(k + 1, 0);
  ++buckets_[k];
}

// The estimate of the value of rank `rank` (0-based) in ascending order.
double LatencyQuantiles::estimate_at_rank(int64_t rank) const {
  if (rank < zeros_) return 0;
  int64_t seen = zeros_;
  for (size_t k = 0; k < buckets_.size(); ++k) {
    seen += buckets_[k];
    if (rank < seen) {
      const double upper = std::exp(static_cast<double>(first_bucket_ + static_cast<int>(k)) * log_gamma_);
      return 2 * upper / (kGamma + 1);
    }
  }
  return 0;  // unreachable for rank < count_
}

double LatencyQuantiles::percentile(double q) {
  if (!sketched_) {
    if (!sorted_) std::sort(values_.begin(), values_.end());
    sorted_ = true;
    return percentile_of_sorted(values_, q);
  }
  double rank = q * static_cast<double>(count_ - 1);
  int64_t low = static_cast<int64_t>(std::floor(rank));
  int64_t high = std::min(low + 1, count_ - 1);
  const double at_low = estimate_at_rank(low);
  return at_low + (rank - static_cast<double>(low)) * (estimate_at_rank(high) - at_low);
}

}  // namespace kvtier
