#include "hw/store/memory_region.h"

#include <cstdlib>
#include <new>

#include "hw/store/block_file.h"

namespace kvtier::hw {

MemoryRegion allocate_host_region(uint64_t bytes) {
  const uint64_t rounded = round_up_to_io(bytes);
  void* data = std::aligned_alloc(kIoAlignment, rounded);
  if (data == nullptr) throw std::bad_alloc();
  return MemoryRegion(static_cast<std::byte*>(data), rounded, MemoryKind::kHost,
                      [](std::byte* p) { std::free(p); });
}

}  // namespace kvtier::hw
