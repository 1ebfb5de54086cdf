// The statistics a validation reports: percentiles as the simulator's summary computes them
// (sim/core/quantiles.h), and relative errors.
#pragma once

#include "sim/core/quantiles.h"

namespace kvtier::validation {

// (predicted - measured) / measured.
inline double relative_error(double predicted, double measured) {
  return (predicted - measured) / measured;
}

}  // namespace kvtier::validation
