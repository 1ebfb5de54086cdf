// An owned, aligned block of memory that a page pool carves into pages.
//
// The store's three tiers are pools of equal pages over one region each: device memory (HBM), pinned
// host memory (DRAM the GPU copies to at full PCIe speed and O_DIRECT can read and write), or plain
// aligned host memory where no GPU is built. A MemoryRegion carries its release function, so a pool
// does not care which allocator made it. Regions are 4 KiB-aligned, as O_DIRECT requires.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace kvtier::hw {

enum class MemoryKind { kHost, kPinnedHost, kDevice };

class MemoryRegion {
 public:
  MemoryRegion(std::byte* data, uint64_t bytes, MemoryKind kind, std::function<void(std::byte*)> release)
      : data_(data, std::move(release)), bytes_(bytes), kind_(kind) {}

  std::byte* data() const { return data_.get(); }
  uint64_t bytes() const { return bytes_; }
  MemoryKind kind() const { return kind_; }

 private:
  std::unique_ptr<std::byte, std::function<void(std::byte*)>> data_;
  uint64_t bytes_;
  MemoryKind kind_;
};

// Page-aligned host memory from the C++ runtime (no GPU involved). Throws std::bad_alloc.
MemoryRegion allocate_host_region(uint64_t bytes);

}  // namespace kvtier::hw
