// IdIndex (id_index.h) with a fast path for ids that are small and dense, as traces that number their
// blocks in order give them (Mooncake's hash_ids count from 0): such ids index an array directly, 4 bytes
// an id and one memory access, where the hash table takes 16 and a probe that misses the cache. On the
// Mooncake sample the cache's block index on it made the simulation about 6 % faster. The array covers an
// id only while the id stays within four times the ids stored, so that sparse ids cannot make it large;
// the rest go to the hash table. Trace statistics keep to IdIndex alone: their indexes of run heads and
// sampled depths hold a sparse few of the trace's ids, and this index's extra tests in their inner loop
// made their 1M-request benchmark about 16 % slower.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/core/huge_pages.h"
#include "sim/core/id_index.h"

namespace kvtier {

class DenseIdIndex {
 public:
  static constexpr uint32_t kAbsent = IdIndex::kAbsent;

  // Reserved, not touched: the array's pages fault in as ids reach them, and it need not move before 64K.
  DenseIdIndex() { direct_.reserve(kReservedIds); }

  // id's value, or kAbsent.
  uint32_t find(uint64_t id) const {
    if (id < direct_.size() && direct_[id] != kAbsent) return direct_[id];
    return hashed_ ? hashed_->find(id) : kAbsent;
  }
  // Adds id -> value unless id is present; returns the value stored for id. REQUIRES: value != kAbsent.
  uint32_t insert(uint64_t id, uint32_t value) {
    if (id < direct_.size() && direct_[id] != kAbsent) return direct_[id];
    // An id stored while the array did not reach it stays in the hash table.
    const bool in_array_range =
        id < direct_.size() || id < std::max<uint64_t>(kReservedIds, 4 * (size() + 1));
    if (!in_array_range || (hashed_ && hashed_->find(id) != kAbsent)) return insert_hashed(id, value);
    cover_slot(direct_, id, kAbsent);
    direct_[id] = value;
    ++direct_count_;
    return value;
  }
  size_t size() const { return direct_count_ + (hashed_ ? hashed_->size() : 0); }

 private:
  static constexpr uint64_t kReservedIds = uint64_t{1} << 16;

  std::vector<uint32_t, HugePageAllocator<uint32_t>> direct_;
  size_t direct_count_ = 0;
  // Made at the first id the array does not take: its table is 768 KiB from the start.
  uint32_t insert_hashed(uint64_t id, uint32_t value) {
    if (!hashed_) hashed_ = std::make_unique<IdIndex>();
    return hashed_->insert(id, value);
  }

  std::unique_ptr<IdIndex> hashed_;
};

}  // namespace kvtier
