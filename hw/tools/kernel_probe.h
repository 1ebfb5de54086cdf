// Kernel rates for calibration: page gather/scatter and 4-bit quantize/dequantize, timed on the device.
//
// Rates are what the simulator charges per byte of KV: gather and scatter count the page bytes moved
// (one side), quantize and dequantize count the bf16 K/V bytes on the uncompressed side. Each kernel
// runs over ~1 GiB of random data (never zeros), median of five timed runs after a warm-up.
#pragma once

#include <vector>

#include "hw/tools/calibration_run.h"

namespace kvtier::hw {

std::vector<KernelRate> measure_kernel_rates();

}  // namespace kvtier::hw
