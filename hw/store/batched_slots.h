// Slot numbers for one tier of the tiered store, handed out and taken back in batches of transfers.
//
// A slot freed while a batch is being planned (its block moved away or was dropped) returns to the free
// list only at commit(), after the batch's copies ran: so no copy of the batch can overwrite a slot that
// another copy of the same batch still reads, and a batch that fails can be undone (rollback()) with
// every block's bytes still where they were before it. The price: a batch that needs a slot while all
// free ones are pending must be committed first (TieredStore flushes then).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "hw/store/slot_allocator.h"

namespace kvtier::hw {

class BatchedSlots {
 public:
  explicit BatchedSlots(uint64_t capacity) : slots_(capacity) {}

  uint64_t capacity() const { return slots_.capacity(); }
  bool has_free() const { return slots_.free_count() > 0; }

  // The lowest free slot, or nullopt when every slot is taken or pending release.
  std::optional<uint64_t> allocate();
  // Releases `slot` at the next commit(). REQUIRES: allocated and not released yet.
  void release_after_batch(uint64_t slot) { pending_release_.push_back(slot); }

  // The batch's transfers ran: its released slots become free.
  void commit();
  // The batch's transfers did not run: slots it allocated are freed, slots it released stay allocated.
  void rollback();

 private:
  SlotAllocator slots_;
  std::vector<uint64_t> allocated_in_batch_;
  std::vector<uint64_t> pending_release_;
};

}  // namespace kvtier::hw
