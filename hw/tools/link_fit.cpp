#include "hw/tools/link_fit.h"

#include <algorithm>
#include <stdexcept>

namespace kvtier::hw {

LinkFit fit_link(std::span<const TransferTiming> timings) {
  // Weighted normal equations for t = a + b x with weights w = 1 / t^2.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const TransferTiming& t : timings) {
    if (t.seconds <= 0) throw std::invalid_argument("fit_link: a timing of zero or less seconds");
    const double w = 1.0 / (t.seconds * t.seconds);
    const double x = static_cast<double>(t.bytes);
    sw += w;
    sx += w * x;
    sy += w * t.seconds;
    sxx += w * x * x;
    sxy += w * x * t.seconds;
  }
  const double determinant = sw * sxx - sx * sx;
  if (timings.size() < 2 || determinant <= 0) {
    throw std::invalid_argument("fit_link: needs timings of at least two different sizes");
  }
  const double slope = (sw * sxy - sx * sy) / determinant;
  const double intercept = (sy - slope * sx) / sw;
  if (slope <= 0) throw std::invalid_argument("fit_link: time does not grow with size");
  return {std::max(0.0, intercept), 1.0 / slope};
}

}  // namespace kvtier::hw
