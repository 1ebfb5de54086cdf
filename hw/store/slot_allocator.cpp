#include "hw/store/slot_allocator.h"

#include <cassert>

namespace kvtier::hw {

SlotAllocator::SlotAllocator(uint64_t capacity) : capacity_(capacity) {
  for (uint64_t slot = 0; slot < capacity; ++slot) free_.insert(free_.end(), slot);
}

std::optional<std::vector<uint64_t>> SlotAllocator::allocate(uint64_t count) {
  if (count > free_.size()) return std::nullopt;
  std::vector<uint64_t> slots;
  slots.reserve(count);
  auto it = free_.begin();
  for (uint64_t i = 0; i < count; ++i) slots.push_back(*it++);
  free_.erase(free_.begin(), it);
  return slots;
}

void SlotAllocator::release(std::span<const uint64_t> slots) {
  for (uint64_t slot : slots) release(slot);
}

void SlotAllocator::release(uint64_t slot) {
  assert(slot < capacity_);
  [[maybe_unused]] const bool inserted = free_.insert(slot).second;
  assert(inserted && "slot released twice");
}

std::vector<SlotRun> consecutive_runs(std::span<const uint64_t> sorted_slots, uint64_t max_run) {
  std::vector<SlotRun> runs;
  for (uint64_t slot : sorted_slots) {
    if (!runs.empty() && runs.back().first + runs.back().length == slot && runs.back().length < max_run) {
      ++runs.back().length;
    } else {
      runs.push_back({slot, 1});
    }
  }
  return runs;
}

}  // namespace kvtier::hw
