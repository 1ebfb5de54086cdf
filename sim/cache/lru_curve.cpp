#include "sim/cache/lru_curve.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace kvtier {
namespace {

constexpr int64_t kNotCached = std::numeric_limits<int64_t>::max();

}  // namespace

int64_t LruCurve::fenwick_prefix(uint32_t stamp) const {
  int64_t sum = 0;
  for (; stamp > 0; stamp &= stamp - 1) sum += fenwick_[stamp];
  return sum;
}

void LruCurve::fenwick_add(uint32_t stamp, int delta) {
  for (; stamp < fenwick_.size(); stamp += stamp & -stamp) fenwick_[stamp] += delta;
}

int64_t LruCurve::depth(uint32_t stamp) const {
  return distinct_blocks() - fenwick_prefix(stamp - 1);
}

// Stamps only grow; when they run out of room, live blocks are renumbered 1..distinct in stamp order
// (their order, so their depths, unchanged) and the tree is rebuilt at twice the live count.
uint32_t LruCurve::next_stamp() {
  if (last_stamp_ + 1 >= fenwick_.size()) compact();
  return ++last_stamp_;
}

void LruCurve::compact() {
  std::vector<uint64_t> live;
  live.reserve(stamp_of_.size());
  for (uint32_t stamp = 1; stamp <= last_stamp_; ++stamp) {
    auto it = stamp_of_.find(block_at_[stamp]);
    if (it != stamp_of_.end() && it->second == stamp) live.push_back(block_at_[stamp]);
  }
  size_t size = std::max<size_t>(1024, 2 * live.size() + 2);
  // Stamps are uint32_t and tree counts int32_t: up to 2^31 - 1 distinct blocks.
  if (size > std::numeric_limits<uint32_t>::max()) {
    throw std::length_error("LruCurve: more than 2^31 - 1 distinct blocks");
  }
  fenwick_.assign(size, 0);
  block_at_.assign(size, 0);
  last_stamp_ = 0;
  for (uint64_t block : live) {
    uint32_t stamp = ++last_stamp_;
    stamp_of_[block] = stamp;
    block_at_[stamp] = block;
    fenwick_[stamp] = 1;
  }
  // Linear-time Fenwick build from the counts.
  for (uint32_t i = 1; i < size; ++i) {
    uint32_t parent = i + (i & -i);
    if (parent < size) fenwick_[parent] += fenwick_[i];
  }
}

void LruCurve::add(std::span<const uint64_t> block_ids, std::span<const int64_t> block_tokens) {
  depths_.clear();
  int64_t running_max = 0;
  for (size_t i = 0; i < block_ids.size(); ++i) {
    auto it = stamp_of_.find(block_ids[i]);
    int64_t d = it == stamp_of_.end() ? kNotCached : depth(it->second);
    running_max = std::max(running_max, d);
    depths_.push_back(running_max);
  }
  for (size_t i = 0; i < block_ids.size(); ++i) {
    total_blocks_ += 1;
    total_tokens_ += block_tokens[i];
    if (depths_[i] == kNotCached) continue;
    size_t d = static_cast<size_t>(depths_[i]);
    if (d >= hit_blocks_by_depth_.size()) {
      hit_blocks_by_depth_.resize(std::max(d + 1, 2 * hit_blocks_by_depth_.size()), 0);
      hit_tokens_by_depth_.resize(hit_blocks_by_depth_.size(), 0);
    }
    hit_blocks_by_depth_[d] += 1;
    hit_tokens_by_depth_[d] += block_tokens[i];
  }
  // Move the chain to the top, first block uppermost: stamp it last.
  for (size_t i = block_ids.size(); i-- > 0;) {
    auto [it, inserted] = stamp_of_.try_emplace(block_ids[i], 0);
    if (!inserted) fenwick_add(it->second, -1);
    it->second = 0;                 // between stamps: compaction must not count it as live
    uint32_t stamp = next_stamp();  // compaction renumbers existing keys only, so `it` stays valid
    it->second = stamp;
    block_at_[stamp] = block_ids[i];
    fenwick_add(stamp, +1);
  }
}

int64_t LruCurve::hit_blocks(int64_t capacity_blocks) const {
  int64_t end = std::min<int64_t>(capacity_blocks, static_cast<int64_t>(hit_blocks_by_depth_.size()) - 1);
  int64_t hits = 0;
  for (int64_t d = 1; d <= end; ++d) hits += hit_blocks_by_depth_[d];
  return hits;
}

int64_t LruCurve::hit_tokens(int64_t capacity_blocks) const {
  int64_t end = std::min<int64_t>(capacity_blocks, static_cast<int64_t>(hit_tokens_by_depth_.size()) - 1);
  int64_t hits = 0;
  for (int64_t d = 1; d <= end; ++d) hits += hit_tokens_by_depth_[d];
  return hits;
}

}  // namespace kvtier
