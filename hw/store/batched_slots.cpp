#include "hw/store/batched_slots.h"

namespace kvtier::hw {

std::optional<uint64_t> BatchedSlots::allocate() {
  auto slot = slots_.allocate(1);
  if (!slot) return std::nullopt;
  allocated_in_batch_.push_back(slot->front());
  return slot->front();
}

void BatchedSlots::commit() {
  slots_.release(pending_release_);
  pending_release_.clear();
  allocated_in_batch_.clear();
}

void BatchedSlots::rollback() {
  slots_.release(allocated_in_batch_);
  pending_release_.clear();
  allocated_in_batch_.clear();
}

}  // namespace kvtier::hw
