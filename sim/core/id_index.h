// An open-addressing map from 64-bit ids to 32-bit values: block ids to the cache's slots, and run heads
// and sampled depths to nodes in trace statistics. Every block of every request goes through one, so it
// is the simulator's and the statistics' hottest table. std::unordered_map allocates a node per entry:
// it took 10x longer on the 1M-request trace-statistics benchmark, and the cache's lookups on it were
// 13-16 % of the closed-loop simulation benchmark's profile against 8-9 % here (docs/cache.md). A flat
// map (absl, boost >= 1.81) is not among this project's dependencies. Linear probing, a power-of-two
// size, at most three quarters full; entries are never erased; the table's memory comes from huge pages
// once it passes 2 MiB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/core/huge_pages.h"

namespace kvtier {

class IdIndex {
 public:
  static constexpr uint32_t kAbsent = UINT32_MAX;

  IdIndex();
  // id's value, or kAbsent.
  uint32_t find(uint64_t id) const { return slots_[slot_of(id)].value; }
  // Adds id -> value unless id is present; returns the value stored for id. REQUIRES: value != kAbsent.
  uint32_t insert(uint64_t id, uint32_t value) {
    size_t slot = slot_of(id);
    if (slots_[slot].value != kAbsent) return slots_[slot].value;
    // Keep the load at most three quarters: probe runs stay a few slots (a cache line or two), and the
    // tables take half the fresh memory that a load under one half did.
    if (4 * (used_ + 1) > 3 * slots_.size()) {
      grow();
      slot = slot_of(id);
    }
    slots_[slot] = {id, value};
    ++used_;
    return value;
  }
  size_t size() const { return used_; }
  // Starts loading id's home slot into the cache, for a find or insert soon after: lookups land at
  // random in a large table, and several misses in flight cost little more than one.
  void prefetch(uint64_t id) const { __builtin_prefetch(&slots_[home_slot(id)]); }

 private:
  // 12 bytes, not 16 with padding: a quarter less fresh memory for the kernel to clear, and more slots
  // per cache line. x86-64 and AArch64 load the unaligned id at little or no extra cost.
  struct __attribute__((packed)) Slot {
    uint64_t id;
    uint32_t value;  // kAbsent marks an empty slot
  };
  static_assert(sizeof(Slot) == 12);
  // Ids from traces may be small consecutive integers (Mooncake): spread them before masking.
  static uint64_t spread(uint64_t id) {
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdULL;
    return id ^ (id >> 33);
  }
  size_t home_slot(uint64_t id) const { return static_cast<size_t>(spread(id)) & (slots_.size() - 1); }
  // The slot holding id, or the empty one where it would go.
  size_t slot_of(uint64_t id) const {
    const size_t mask = slots_.size() - 1;
    size_t slot = home_slot(id);
    while (slots_[slot].value != kAbsent && slots_[slot].id != id) slot = (slot + 1) & mask;
    return slot;
  }
  void grow();

  std::vector<Slot, HugePageAllocator<Slot>> slots_;
  size_t used_ = 0;
};

}  // namespace kvtier
