#include "hw/store/gpu_device_pages.h"

#include "hw/store/gpu_memory.h"

namespace kvtier::hw {

GpuDevicePages::GpuDevicePages(std::span<const int64_t> page_bytes, int64_t pages)
    : cache_(page_bytes, pages),
      engine_(cache_, {.host_pitch = round_up_to_io(static_cast<uint64_t>(cache_.staged_page_bytes()))}) {}

MemoryRegion GpuDevicePages::allocate_host(uint64_t bytes) const {
  return allocate_pinned_region(bytes);
}

void GpuDevicePages::offload(std::span<const int64_t> pages, std::span<std::byte* const> host_pages) {
  engine_.offload(pages, host_pages);
}

void GpuDevicePages::reload(std::span<const int64_t> pages, std::span<std::byte* const> host_pages) {
  engine_.reload(pages, host_pages);
}

void GpuDevicePages::offload_packed(const PagePacking& packing, std::span<const int64_t> pages,
                                    std::span<std::byte* const> host_pages) {
  engine_.offload_packed(packing, pages, host_pages);
}

void GpuDevicePages::reload_packed(const PagePacking& packing, std::span<const int64_t> pages,
                                   std::span<std::byte* const> host_pages) {
  engine_.reload_packed(packing, pages, host_pages);
}

}  // namespace kvtier::hw
