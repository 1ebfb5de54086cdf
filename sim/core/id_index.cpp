#include "sim/core/id_index.h"

namespace kvtier {
namespace {

constexpr size_t kInitialSlots = 1 << 16;

}  // namespace

IdIndex::IdIndex() : slots_(kInitialSlots, Slot{0, kAbsent}) {}

void IdIndex::grow() {
  decltype(slots_) old(slots_.size() * 2, Slot{0, kAbsent});
  old.swap(slots_);
  for (const Slot& s : old) {
    if (s.value != kAbsent) slots_[slot_of(s.id)] = s;
  }
}

}  // namespace kvtier
