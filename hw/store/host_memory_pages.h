// DevicePages in plain host memory: the reference the tiered store's tests run against where there is
// no GPU. Copies are memcpy (packed ones the CPU reference of int4, page_packing.h) and complete before
// the call returns; page ids are checked.
#pragma once

#include "hw/store/device_pages.h"

namespace kvtier::hw {

class HostMemoryPages : public DevicePages {
 public:
  // Throws StoreError(kBadRequest) unless pages > 0 and page_bytes > 0.
  HostMemoryPages(int64_t pages, uint64_t page_bytes);

  int64_t page_count() const override { return pages_; }
  uint64_t page_bytes() const override { return page_bytes_; }
  MemoryRegion allocate_host(uint64_t bytes) const override { return allocate_host_region(bytes); }

  // Throw StoreError(kBadRequest) naming the page for an id out of range or spans of unequal length.
  void offload(std::span<const int64_t> pages, std::span<std::byte* const> host_pages) override;
  void reload(std::span<const int64_t> pages, std::span<std::byte* const> host_pages) override;
  // Also throw StoreError(kBadRequest) for a packing of pages of another size.
  void offload_packed(const PagePacking& packing, std::span<const int64_t> pages,
                      std::span<std::byte* const> host_pages) override;
  void reload_packed(const PagePacking& packing, std::span<const int64_t> pages,
                     std::span<std::byte* const> host_pages) override;
  void synchronize() override {}

 private:
  std::byte* page(int64_t id) const;
  void check_packing(const PagePacking& packing) const;

  int64_t pages_;
  uint64_t page_bytes_;
  MemoryRegion memory_;
};

}  // namespace kvtier::hw
