// DevicePages on a GPU: an HbmKvCache (one pool per layer group) moved by the batched OffloadEngine.
// Host memory is pinned, and the engine merges host pages that sit host_pitch() apart into one copy.
// Packed copies quantize and dequantize on the GPU with the int4 kernels (kernels_gpu.h).
#pragma once

#include <cstdint>
#include <span>

#include "hw/store/device_pages.h"
#include "hw/store/hbm_kv_cache.h"
#include "hw/store/offload_engine.h"

namespace kvtier::hw {

class GpuDevicePages : public DevicePages {
 public:
  // `page_bytes`: one entry per layer group (layout_page_bytes()). Throws gpu::GpuError when HBM
  // cannot hold `pages` pages.
  GpuDevicePages(std::span<const int64_t> page_bytes, int64_t pages);

  int64_t page_count() const override { return cache_.pages(); }
  uint64_t page_bytes() const override { return static_cast<uint64_t>(cache_.staged_page_bytes()); }
  MemoryRegion allocate_host(uint64_t bytes) const override;

  void offload(std::span<const int64_t> pages, std::span<std::byte* const> host_pages) override;
  void reload(std::span<const int64_t> pages, std::span<std::byte* const> host_pages) override;
  void offload_packed(const PagePacking& packing, std::span<const int64_t> pages,
                      std::span<std::byte* const> host_pages) override;
  void reload_packed(const PagePacking& packing, std::span<const int64_t> pages,
                     std::span<std::byte* const> host_pages) override;
  void synchronize() override { engine_.synchronize(); }

  const HbmKvCache& cache() const { return cache_; }

 private:
  HbmKvCache cache_;
  OffloadEngine engine_;
};

}  // namespace kvtier::hw
