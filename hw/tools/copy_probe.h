// Host<->device and device<->device copy timings: the PCIe and HBM numbers calibration needs.
//
// Each size is timed with device events around a run of back-to-back copies after a warm-up, five
// times, and the median kept. Host buffers are pinned (pageable copies are 4x slower and are not what
// the store uses). Device-to-device rates count bytes read plus bytes written, as HBM bandwidth does.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kvtier::hw {

enum class CopyDirection { kHostToDevice, kDeviceToHost, kDeviceToDevice, kBoth };
// "h2d", "d2h", "d2d", "both"
inline const char* to_string(CopyDirection direction) {
  constexpr const char* kNames[] = {"h2d", "d2h", "d2d", "both"};
  return kNames[static_cast<int>(direction)];
}

struct CopySample {
  CopyDirection direction = CopyDirection::kHostToDevice;
  uint64_t bytes = 0;  // per copy (per direction for kBoth)
  double seconds = 0;  // per copy
  // Bytes moved per second: for kBoth both directions together, for kDeviceToDevice read + write.
  double bytes_per_s = 0;
};

// Pinned host-to-device and device-to-host copies of each size.
std::vector<CopySample> measure_host_copies(std::span<const uint64_t> sizes);
// One host-to-device and one device-to-host copy of `bytes` each, on two streams at once.
CopySample measure_bidirectional_copy(uint64_t bytes);
// A device-to-device copy of `bytes`.
CopySample measure_device_copy(uint64_t bytes);

}  // namespace kvtier::hw
