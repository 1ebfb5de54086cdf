// kvtier-hw replay's store on the GPU: its HBM pages are the device's (GpuDevicePages).
#include "hw/store/gpu_device_pages.h"
#include "hw/tools/store_replay.h"

namespace kvtier::hw {

ReplayReport run_replay(const ReplayOptions& options) {
  return run_replay(options, [](std::span<const int64_t> page_bytes, int64_t pages) {
    return std::make_unique<GpuDevicePages>(page_bytes, pages);
  });
}

}  // namespace kvtier::hw
