#include "sim/workload/prefix_forest.h"

#include <algorithm>

namespace kvtier {
void ChunkedIds::append(const uint64_t* first, const uint64_t* last) {
  while (first != last) {
    if ((size_ & kChunkMask) == 0) chunks_.emplace_back().reserve(kChunkMask + 1);
    Chunk& chunk = chunks_.back();
    size_t count = std::min<size_t>(chunk.capacity() - chunk.size(), static_cast<size_t>(last - first));
    chunk.insert(chunk.end(), first, first + count);
    first += count;
    size_ += count;
  }
}

void PrefixForest::prefetch(const std::vector<uint64_t>& ids, size_t likely_hit) const {
  if (ids.empty()) return;
  if (likely_hit == 0 || likely_hit > ids.size()) {
    heads_.prefetch(ids[0]);
    for (size_t sample = kSampleStride - 1; sample < ids.size(); sample += kSampleStride) {
      samples_.prefetch(ids[sample]);
    }
    return;
  }
  // The probes of deepest_sample when exactly the samples above depth likely_hit - 1 are unseen.
  size_t lo = 0, hi = ids.size() / kSampleStride;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    size_t depth = mid * kSampleStride + kSampleStride - 1;
    samples_.prefetch(ids[depth]);
    if (depth < likely_hit) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  // The walk from that sample (or from the root) looks up the head index for the ids after it, and the
  // first new block becomes the head of a run.
  size_t from = lo > 0 ? (lo - 1) * kSampleStride + kSampleStride : 0;
  if (from == 0) heads_.prefetch(ids[0]);
  size_t reach = std::min(ids.size(), from + kSampleStride + 1);
  for (size_t i = from; i < reach; ++i) heads_.prefetch(ids[i]);
  // The blocks past the hit are new: append_run adds their sampled depths to the sample index.
  size_t sample = likely_hit + (kSampleStride - 1 - likely_hit % kSampleStride);
  for (; sample < ids.size(); sample += kSampleStride) samples_.prefetch(ids[sample]);
}

uint32_t PrefixForest::deepest_sample(const std::vector<uint64_t>& ids, size_t& depth) const {
  // Sampled depths are kSampleStride * m + kSampleStride - 1; seen-ness is monotone along the chain.
  size_t lo = 0, hi = ids.size() / kSampleStride;  // samples [0, lo) seen, [hi, ...) not
  uint32_t found = kNone;  // the node of the last seen probe, which ends up being sample lo - 1
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    uint32_t node = samples_.find(ids[mid * kSampleStride + kSampleStride - 1]);
    if (node != kNone) {
      lo = mid + 1;
      found = node;
    } else {
      hi = mid;
    }
  }
  if (lo > 0) depth = (lo - 1) * kSampleStride + kSampleStride - 1;
  return found;
}

PrefixForest::Placement PrefixForest::add(const std::vector<uint64_t>& ids) {
  Placement placement{0, true};
  if (ids.empty()) return placement;
  size_t depth = 0;
  uint32_t node = deepest_sample(ids, depth);
  if (node == kNone) {  // start from the root of the request's first block
    depth = 0;
    uint32_t run = heads_.find(ids[0]);
    if (run != kNone && runs_[run].parent != kNone) {
      placement.consistent = false;
      run = kNone;
    }
    node = run == kNone ? kNone : runs_[run].first;
  }
  if (node != kNone) {
    // The walk ends at a head-index lookup of the id after the hit, a cache miss that would come
    // last; every id it may reach is loaded now instead, alongside the walk's own misses.
    size_t reach = std::min(ids.size(), depth + 1 + kSampleStride);
    for (size_t i = depth + 1; i < reach; ++i) heads_.prefetch(ids[i]);
    placement.hit_blocks = walk(ids, node, depth, placement.consistent) + 1;
  }
  if (placement.hit_blocks < ids.size()) append_run(ids, placement.hit_blocks, node);
  return placement;
}

size_t PrefixForest::walk(const std::vector<uint64_t>& ids, uint32_t& node, size_t depth,
                          bool& consistent) const {
  // Walk forward while the next node in memory holds the next id (ids name prefixes, so an equal id
  // there is this chain's next block, in the same run or in a run hung right below), else hop into a
  // child run through the head index.
  while (depth + 1 < ids.size()) {
    uint64_t next = ids[depth + 1];
    if (node + 1 < node_id_.size() && node_id_[node + 1] == next) {
      ++node;
      ++depth;
      continue;
    }
    uint32_t run = heads_.find(next);
    if (run == kNone) break;
    if (runs_[run].parent != node) {
      consistent = false;
      break;
    }
    node = runs_[run].first;
    ++depth;
  }
  return depth;
}

void PrefixForest::append_run(const std::vector<uint64_t>& ids, size_t from, uint32_t parent) {
  uint32_t first = static_cast<uint32_t>(node_id_.size());
  uint32_t run = static_cast<uint32_t>(runs_.size());
  runs_.push_back({first, parent});
  node_id_.append(ids.data() + from, ids.data() + ids.size());
  heads_.insert(ids[from], run);
  size_t sample =
      from % kSampleStride == kSampleStride - 1 ? from : from + (kSampleStride - 1 - from % kSampleStride);
  for (; sample < ids.size(); sample += kSampleStride) {
    samples_.insert(ids[sample], first + static_cast<uint32_t>(sample - from));
  }
}

}  // namespace kvtier
