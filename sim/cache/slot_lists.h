// Intrusive doubly-linked lists over dense block slots, the building block of every eviction policy.
//
// The tiered cache names each distinct block by a slot (a small dense integer), so a policy keeps its
// order in arrays indexed by slot instead of nodes in a hash map: no allocation and no hashing per
// access. A slot is in at most one list of a given SlotLists at a time (a policy's resident queues and
// its ghost queues share one SlotLists). Lists run from head (most recent) to tail (next to go).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/core/huge_pages.h"

namespace kvtier {

inline constexpr uint32_t kNoSlot = UINT32_MAX;

// Slots an array indexed by slot holds before it must move: growing a vector copies it into fresh memory,
// and every fresh page faults (several microseconds on a virtual machine). Reserved memory that no slot
// reaches is never touched, so costs nothing but address space: 8 MiB for a policy's links, 40 MiB for the
// cache's block array. 2^20 slots hold the Mooncake sample's 38,788 distinct blocks 16 times over.
inline constexpr size_t kReservedSlots = size_t{1} << 20;

// An empty array indexed by slot, with kReservedSlots reserved (grown with cover_slot).
template <typename T, typename Allocator = std::allocator<T>>
std::vector<T, Allocator> slot_array() {
  std::vector<T, Allocator> array;
  array.reserve(kReservedSlots);
  return array;
}

class SlotLists {
 public:
  struct List {
    uint32_t head = kNoSlot;
    uint32_t tail = kNoSlot;
    int64_t size = 0;
  };

  // Grows the link arrays so that `slot` can be linked.
  void ensure(uint32_t slot) {
    cover_slot(prev_, slot, kNoSlot);
    cover_slot(next_, slot, kNoSlot);
  }

  // REQUIRES: `slot` is in no list.
  void push_front(List& list, uint32_t slot) {
    ensure(slot);
    prev_[slot] = kNoSlot;
    next_[slot] = list.head;
    if (list.head != kNoSlot) prev_[list.head] = slot;
    list.head = slot;
    if (list.tail == kNoSlot) list.tail = slot;
    ++list.size;
  }

  // Whether `slot` is in `list`. REQUIRES: `list` is the only list kept here (a slot at the head of
  // another list has no predecessor either).
  bool in_only_list(const List& list, uint32_t slot) const {
    return slot < prev_.size() && (prev_[slot] != kNoSlot || list.head == slot);
  }

  // REQUIRES: `slot` is in `list`.
  void unlink(List& list, uint32_t slot) {
    uint32_t before = prev_[slot];
    uint32_t after = next_[slot];
    (before == kNoSlot ? list.head : next_[before]) = after;
    (after == kNoSlot ? list.tail : prev_[after]) = before;
    prev_[slot] = next_[slot] = kNoSlot;
    --list.size;
  }

  void move_to_front(List& list, uint32_t slot) {
    if (list.head == slot) return;
    unlink(list, slot);
    push_front(list, slot);
  }

 private:
  std::vector<uint32_t> prev_ = slot_array<uint32_t>();
  std::vector<uint32_t> next_ = slot_array<uint32_t>();
};

}  // namespace kvtier
