// A tier's memory as an array of equal pages, with a free list.
//
// A PagePool owns one MemoryRegion (HBM, pinned DRAM or plain DRAM) and splits it into pages of
// `page_bytes`. Pages are numbered; page(i) is the address of page i (a device address for HBM, never
// dereferenced on the host). Allocation takes the lowest free pages, so a batch from a fresh pool is
// one contiguous range that a single copy or a single disk I/O can move (see SlotAllocator).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "hw/store/memory_region.h"
#include "hw/store/slot_allocator.h"

namespace kvtier::hw {

class PagePool {
 public:
  // REQUIRES: page_bytes > 0 and a multiple of 4 KiB where the pool feeds O_DIRECT.
  PagePool(MemoryRegion memory, uint64_t page_bytes);

  uint64_t page_bytes() const { return page_bytes_; }
  uint64_t page_count() const { return pages_.capacity(); }
  uint64_t free_pages() const { return pages_.free_count(); }
  MemoryKind kind() const { return memory_.kind(); }

  std::byte* page(uint64_t index) const { return memory_.data() + index * page_bytes_; }

  // The `count` lowest free pages, or nullopt (nothing taken) when fewer are free.
  std::optional<std::vector<uint64_t>> allocate(uint64_t count) { return pages_.allocate(count); }
  void release(std::span<const uint64_t> pages) { pages_.release(pages); }

 private:
  MemoryRegion memory_;
  uint64_t page_bytes_;
  SlotAllocator pages_;
};

}  // namespace kvtier::hw
