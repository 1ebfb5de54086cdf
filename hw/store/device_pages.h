// The HBM side of the tiered store, reduced to what placement needs: numbered pages that can be copied
// to and from host pages in batches.
//
// TieredStore decides which page holds which block and drives the copies through this interface, so its
// logic runs and is tested without a GPU: HostMemoryPages (host_memory_pages.h) is the reference over
// plain host memory, GpuDevicePages (gpu_device_pages.h) the real one over HbmKvCache and OffloadEngine.
// A page is one block of every layer group, moved in the staging layout (page_copy.h): page_bytes()
// bytes back to back. Host pages handed to offload()/reload() come from allocate_host() and hold at least
// page_bytes() bytes; pages that sit host_pitch() apart can be moved by one copy.
// offload_packed()/reload_packed() are the same copies with the host side packed (page_packing.h): the
// device quantizes a page before it leaves and dequantizes it after it arrived, and only the packed bytes
// cross; the host pages then hold packing.packed_bytes(), and those round_up_to_io() of it apart can be
// moved by one copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "hw/store/block_file.h"
#include "hw/store/memory_region.h"
#include "hw/store/page_packing.h"

namespace kvtier::hw {

class DevicePages {
 public:
  virtual ~DevicePages() = default;

  virtual int64_t page_count() const = 0;
  virtual uint64_t page_bytes() const = 0;  // one page of every layer group, staged back to back
  // Distance between consecutive host pages of the store's pools: page_bytes() rounded up to 4 KiB, so
  // that the NVMe store moves host pages with O_DIRECT.
  uint64_t host_pitch() const { return round_up_to_io(page_bytes()); }
  // Host memory this device copies at full speed (pinned for a GPU); 4 KiB-aligned.
  virtual MemoryRegion allocate_host(uint64_t bytes) const = 0;

  // Enqueue copies of pages[i] to host_pages[i] / host_pages[i] into pages[i]; synchronize() waits for
  // every enqueued copy. REQUIRES: the page ids are below page_count(), spans of equal length.
  virtual void offload(std::span<const int64_t> pages, std::span<std::byte* const> host_pages) = 0;
  virtual void reload(std::span<const int64_t> pages, std::span<std::byte* const> host_pages) = 0;
  // REQUIRES besides: packing.page_bytes() == page_bytes().
  virtual void offload_packed(const PagePacking& packing, std::span<const int64_t> pages,
                              std::span<std::byte* const> host_pages) = 0;
  virtual void reload_packed(const PagePacking& packing, std::span<const int64_t> pages,
                             std::span<std::byte* const> host_pages) = 0;
  virtual void synchronize() = 0;
};

}  // namespace kvtier::hw
