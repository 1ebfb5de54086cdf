#include "sim/core/power_throttle.h"

#include <algorithm>

namespace kvtier {

double GpuHeat::run(double boost_s, bool compute_bound) {
  if (!compute_bound) {
    rest(boost_s);
    return boost_s;
  }
  const double cool = std::clamp(throttle_.onset_s - heat_, 0.0, boost_s);
  const double seconds = cool + (boost_s - cool) * throttle_.slowdown;
  heat_ = std::min(throttle_.onset_s, heat_ + seconds);
  return seconds;
}

void GpuHeat::rest(double seconds) {
  heat_ = std::max(0.0, heat_ - seconds);
}

double unthrottled_seconds(const PowerThrottle& throttle, double seconds) {
  if (seconds <= throttle.onset_s) return seconds;
  return throttle.onset_s + (seconds - throttle.onset_s) / throttle.slowdown;
}

}  // namespace kvtier
