#include "hw/store/page_pool.h"

#include "hw/store/store_error.h"

namespace kvtier::hw {

PagePool::PagePool(MemoryRegion memory, uint64_t page_bytes)
    : memory_(std::move(memory)),
      page_bytes_(page_bytes),
      pages_(page_bytes == 0 ? 0 : memory_.bytes() / page_bytes) {
  if (page_bytes == 0) throw StoreError(StoreErrc::kBadRequest, "a page pool needs page_bytes > 0");
}

}  // namespace kvtier::hw
