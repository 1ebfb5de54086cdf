// Fits "time = latency + bytes / bandwidth" to transfer timings, the model the simulator uses for a link.
//
// The fit minimises relative error (weighted least squares, weights 1/time^2), so a 4 KiB copy that
// takes microseconds counts as much as a 64 MiB one that takes a millisecond; an ordinary fit would let
// the large transfers decide the intercept alone, and the latency is what the small ones measure.
#pragma once

#include <cstdint>
#include <span>

namespace kvtier::hw {

struct TransferTiming {
  uint64_t bytes = 0;
  double seconds = 0;
};

struct LinkFit {
  double latency = 0;    // seconds, >= 0
  double bandwidth = 0;  // bytes/s
};

// REQUIRES: at least two timings with different sizes; throws std::invalid_argument otherwise.
LinkFit fit_link(std::span<const TransferTiming> timings);

}  // namespace kvtier::hw
