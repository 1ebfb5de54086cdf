#include "sim/core/id_index.h"

#include <algorithm>

namespace kvtier {
namespace {

constexpr size_t kInitialSlots = 1 << 16;
constexpr size_t kInitialDirectIds = 1 << 12;

}  // namespace

void IdIndex::grow_direct(uint64_t id) {
  const size_t size =
      std::min<size_t>(kDirectIds, std::max<size_t>({id + 1, 2 * direct_.size(), kInitialDirectIds}));
  direct_.resize(size, kAbsent);
}

void IdIndex::allocate_table() {
  slots_.assign(kInitialSlots, Slot{0, kAbsent});
}

void IdIndex::grow_table() {
  decltype(slots_) old(slots_.size() * 2, Slot{0, kAbsent});
  old.swap(slots_);
  for (const Slot& s : old) {
    if (s.value != kAbsent) slots_[slot_of(s.id)] = s;
  }
}

}  // namespace kvtier
