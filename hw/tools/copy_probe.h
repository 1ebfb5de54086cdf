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

// A batch of KV pages moved through the store's offload engine and waited for, as the serving loop times
// one transfer: kDeviceToHost gathers the pages and copies them to pinned host pages (an offload),
// kHostToDevice copies them back and scatters them (a reload).
struct OffloadSample {
  CopyDirection direction = CopyDirection::kDeviceToHost;
  uint64_t page_bytes = 0;
  uint64_t pages = 0;
  double seconds = 0;  // median of the batch's runs
  uint64_t bytes() const { return page_bytes * pages; }
  double bytes_per_s() const { return static_cast<double>(bytes()) / seconds; }
};

// Pinned host-to-device and device-to-host copies of each size.
std::vector<CopySample> measure_host_copies(std::span<const uint64_t> sizes);
// One host-to-device and one device-to-host copy of `bytes` each, on two streams at once.
CopySample measure_bidirectional_copy(uint64_t bytes);
// A device-to-device copy of `bytes`.
CopySample measure_device_copy(uint64_t bytes);

}  // namespace kvtier::hw
