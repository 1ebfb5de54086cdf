// Block ids (64-bit, from traces and generators) to 32-bit values (the cache's dense slots, the LRU
// curve's stamps), in one flat array.
//
// Every block of every request is looked up once per admission, so this is the cache model's hottest
// table. std::unordered_map keeps a heap node per entry and reaches it through a bucket: two cache misses
// per lookup and an allocation per insertion. Here an entry sits in an open-addressing array (linear
// probing, a power-of-two size, Fibonacci hashing so that a trace's consecutive small ids spread out), at
// most three-quarters full. Entries are never erased: a block, once seen, keeps its value's place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace kvtier {

class BlockIdMap {
 public:
  // Null when `id` is absent. The pointer lasts until the next insertion.
  const uint32_t* find(uint64_t id) const {
    if (entries_.empty()) return nullptr;
    const Entry& entry = entries_[probe(id)];
    return entry.used != 0 ? &entry.value : nullptr;
  }
  uint32_t* find(uint64_t id) { return const_cast<uint32_t*>(std::as_const(*this).find(id)); }

  // The value of `id`, and whether it was absent (it then maps to `value`).
  std::pair<uint32_t*, bool> try_emplace(uint64_t id, uint32_t value) {
    if (4 * (size_ + 1) > 3 * entries_.size()) grow();
    Entry& entry = entries_[probe(id)];
    if (entry.used != 0) return {&entry.value, false};
    entry = Entry{.id = id, .value = value, .used = 1};
    ++size_;
    return {&entry.value, true};
  }

  size_t size() const { return size_; }

 private:
  struct Entry {
    uint64_t id = 0;
    uint32_t value = 0;
    uint32_t used = 0;
  };

  // The entry holding `id`, or the empty one where it would go.
  size_t probe(uint64_t id) const {
    const size_t mask = entries_.size() - 1;
    size_t i = static_cast<size_t>((id * 0x9E3779B97F4A7C15ULL) >> shift_);
    while (entries_[i].used != 0 && entries_[i].id != id) i = (i + 1) & mask;
    return i;
  }
  void grow();

  std::vector<Entry> entries_;
  size_t size_ = 0;
  int shift_ = 64;  // 64 - log2(entries_.size())
};

}  // namespace kvtier
