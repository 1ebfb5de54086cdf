// A free list of fixed-size slots, numbered 0..capacity-1, that hands out low numbers first.
//
// Every tier of the store (HBM pages, pinned host pages, NVMe blocks) is an array of equal slots;
// this class only decides which slot numbers are free. It always takes the lowest free numbers, so a
// batch allocated from an unfragmented pool is one contiguous run: the host pool can then receive a
// batch with one device-to-host copy, and the NVMe store can write it with one large I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <vector>

namespace kvtier::hw {

class SlotAllocator {
 public:
  explicit SlotAllocator(uint64_t capacity);

  uint64_t capacity() const { return capacity_; }
  uint64_t free_count() const { return free_.size(); }

  // The `count` lowest free slots, in increasing order, or nullopt (and nothing taken) when fewer
  // than `count` are free.
  std::optional<std::vector<uint64_t>> allocate(uint64_t count);

  // REQUIRES: each slot was allocated and not yet released.
  void release(std::span<const uint64_t> slots);
  void release(uint64_t slot);

 private:
  uint64_t capacity_;
  std::set<uint64_t> free_;
};

// Splits increasing slot numbers into runs of consecutive numbers: {3,4,5,9,10} -> {{3,3},{9,2}}
// as (first, length) pairs, each run at most `max_run` long.
struct SlotRun {
  uint64_t first = 0;
  uint64_t length = 0;
  bool operator==(const SlotRun&) const = default;
};
std::vector<SlotRun> consecutive_runs(std::span<const uint64_t> sorted_slots, uint64_t max_run);

}  // namespace kvtier::hw
