// A map from 64-bit ids to 32-bit values: block ids to the cache's slots, and run heads and sampled
// depths to nodes in trace statistics. Every block of every request goes through one, so it is the
// simulator's and the statistics' hottest table.
//
// Ids below kDirectIds are values in a plain array indexed by id: traces that number their blocks from 0
// (Mooncake's hash_ids count up) take one load per lookup, no hash, and a table of 4 bytes per id. Other
// ids go to an open-addressing table: std::unordered_map allocates a node per entry, and took 10x longer
// on the 1M-request trace-statistics benchmark (docs/cache.md); a flat map (absl, boost >= 1.81) is not
// among this project's dependencies. Linear probing, a power-of-two size, at most three quarters full,
// allocated at the first such id; entries are never erased. Either array's memory comes from huge pages
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
  // Ids below this are kept in the plain array (at most 16 MiB of it).
  static constexpr uint64_t kDirectIds = uint64_t{1} << 22;

  // id's value, or kAbsent.
  uint32_t find(uint64_t id) const {
    if (id < kDirectIds) return id < direct_.size() ? direct_[id] : kAbsent;
    return slots_.empty() ? kAbsent : slots_[slot_of(id)].value;
  }
  // Adds id -> value unless id is present; returns the value stored for id. REQUIRES: value != kAbsent.
  uint32_t insert(uint64_t id, uint32_t value) {
    if (id < kDirectIds) {
      if (id >= direct_.size()) grow_direct(id);
      uint32_t& stored = direct_[id];
      if (stored == kAbsent) {
        stored = value;
        ++used_;
      }
      return stored;
    }
    if (slots_.empty()) allocate_table();
    size_t slot = slot_of(id);
    if (slots_[slot].value != kAbsent) return slots_[slot].value;
    // Keep the load at most three quarters: probe runs stay a few slots (a cache line or two), and the
    // tables take half the fresh memory that a load under one half did.
    if (4 * (hashed_ + 1) > 3 * slots_.size()) {
      grow_table();
      slot = slot_of(id);
    }
    slots_[slot] = {id, value};
    ++hashed_;
    ++used_;
    return value;
  }
  size_t size() const { return used_; }
  // Starts loading where id's value is, for a find or insert soon after: lookups land at random in a
  // large table, and several misses in flight cost little more than one.
  void prefetch(uint64_t id) const {
    if (id < kDirectIds) {
      if (id < direct_.size()) __builtin_prefetch(&direct_[id]);
    } else if (!slots_.empty()) {
      __builtin_prefetch(&slots_[home_slot(id)]);
    }
  }

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
  void grow_direct(uint64_t id);
  void allocate_table();
  void grow_table();

  std::vector<uint32_t, HugePageAllocator<uint32_t>> direct_;  // id -> value, kAbsent for none
  std::vector<Slot, HugePageAllocator<Slot>> slots_;           // empty until an id of kDirectIds or more
  size_t hashed_ = 0;                                          // ids in slots_
  size_t used_ = 0;                                            // ids in either
};

}  // namespace kvtier
