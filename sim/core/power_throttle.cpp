#include "sim/core/power_throttle.h"

#include <algorithm>

namespace kvtier {

double GpuHeat::run(double boost_s, bool compute_bound, double attention_s) {
  if (!compute_bound) {
    rest(boost_s);
    return boost_s;
  }
  const double cool = std::clamp(throttle_.onset_s - heat_, 0.0, boost_s);
  const double share = boost_s > 0 ? std::clamp(attention_s / boost_s, 0.0, 1.0) : 0.0;
  const double seconds = cool + (boost_s - cool) * throttle_.slowdown_of(share);
  heat_ = std::min(throttle_.onset_s, heat_ + seconds);
  return seconds;
}

void GpuHeat::rest(double seconds) {
  heat_ = std::max(0.0, heat_ - seconds);
}

double unthrottled_seconds(const PowerThrottle& throttle, double seconds, double attention_share) {
  if (seconds <= throttle.onset_s) return seconds;
  return throttle.onset_s + (seconds - throttle.onset_s) / throttle.slowdown_of(attention_share);
}

}  // namespace kvtier
