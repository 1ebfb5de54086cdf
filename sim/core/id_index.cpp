#include "sim/core/id_index.h"

namespace kvtier {
namespace {

constexpr size_t kReservedDirectIds = size_t{1} << 16;
constexpr size_t kInitialSlots = size_t{1} << 16;

}  // namespace

// Reserved, not touched: the array's pages fault in as ids reach them, and it need not move before 64K.
IdIndex::IdIndex() {
  direct_.reserve(kReservedDirectIds);
}

void IdIndex::insert_hashed(uint64_t id, uint32_t value) {
  // Keep the load at most three quarters: probe runs stay a few slots (a cache line or two), and the
  // tables take half the fresh memory that a load under one half did.
  if (4 * (hashed_ + 1) > 3 * slots_.size()) grow();
  slots_[slot_of(id)] = {id, value};
  ++hashed_;
}

void IdIndex::grow() {
  decltype(slots_) old(std::max(slots_.size() * 2, kInitialSlots), Slot{0, kAbsent});
  old.swap(slots_);
  for (const Slot& s : old) {
    if (s.value != kAbsent) slots_[slot_of(s.id)] = s;
  }
}

}  // namespace kvtier
