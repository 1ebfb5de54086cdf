// A paged KV cache in HBM, shaped like a serving engine's: one pool per layer group.
//
// A KvLayout is a list of layer groups (bf16 boundary layers, a packed-uint8 4-bit body, ...); each
// group gets its own device pool of pages, all pools indexed by the same page id, so page p of the
// cache is the p-th page of every group. Pages are `page_bytes[g]` long and start every
// `page_stride[g]` bytes (the bytes rounded up to 256, as a real allocator would pad them): the
// group-aware gather/scatter kernels (kernels/page_copy.h) move them to and from staging buffers.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "hw/store/memory_region.h"
#include "hw/kernels/page_copy.h"
#include "hw/store/slot_allocator.h"

namespace kvtier::hw {

class HbmKvCache {
 public:
  // One pool per entry of `page_bytes` (layout_page_bytes(layout, block_tokens)), `pages` pages each.
  // Throws gpu::GpuError when HBM cannot hold it.
  HbmKvCache(std::span<const int64_t> page_bytes, int64_t pages);

  std::span<const PageGroup> groups() const { return groups_; }
  int64_t pages() const { return static_cast<int64_t>(pages_.capacity()); }
  int64_t free_pages() const { return static_cast<int64_t>(pages_.free_count()); }
  // Bytes one page of every group takes in a staging buffer or a host page.
  int64_t staged_page_bytes() const { return kvtier::hw::staged_page_bytes(groups_); }

  // The `count` lowest free page ids, or nullopt (nothing taken) when fewer are free.
  std::optional<std::vector<int64_t>> allocate(int64_t count);
  void release(std::span<const int64_t> page_ids);

 private:
  std::vector<MemoryRegion> memory_;
  std::vector<PageGroup> groups_;
  SlotAllocator pages_;
};

}  // namespace kvtier::hw
