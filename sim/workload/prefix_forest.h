// Every block chain a trace has shown so far, kept so that a request's best-case prefix hit costs a few
// lookups instead of one per block. Internal to trace_stats.
//
// Block ids name whole prefixes, so the blocks seen so far form a forest in which each request's hit
// prefix is a path from a root. PrefixForest stores it as a radix forest: each request's new blocks are
// appended as one run (contiguous in memory) hanging below the node where its hit ended. Two flat
// indexes find nodes: one holds the first id of every run, the other every 16th depth. To place a
// request, a binary search over its sampled depths finds the deepest sampled block already seen; a
// walk forward of at most 16 blocks, comparing ids in place and hopping to child runs through the head
// index, finds the exact end of the hit. The cost is a handful of random accesses per request, however
// long its context; memory is 8 bytes per unique block plus the indexes (about 4 more).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/core/huge_pages.h"
#include "sim/core/id_index.h"

namespace kvtier {

// Append-only ids in fixed 2 MiB chunks: growing never copies (a doubling vector's copies and the page
// faults of its fresh copies took a third of the 1M-request benchmark).
class ChunkedIds {
 public:
  uint64_t operator[](size_t i) const { return chunks_[i >> kChunkBits][i & kChunkMask]; }
  size_t size() const { return size_; }
  void append(const uint64_t* first, const uint64_t* last);

 private:
  static constexpr size_t kChunkBits = 18;
  static constexpr size_t kChunkMask = (size_t{1} << kChunkBits) - 1;
  using Chunk = std::vector<uint64_t, HugePageAllocator<uint64_t>>;
  std::vector<Chunk> chunks_;
  size_t size_ = 0;
};

class PrefixForest {
 public:
  struct Placement {
    size_t hit_blocks;  // the leading blocks of the request that earlier requests brought in
    bool consistent;    // false when an id reappeared after a different predecessor
  };

  // Starts loading the index slots that add(ids) will probe first: the binary search's probes depend
  // on each other, and with their slots loaded at once the cache misses overlap instead of coming one
  // after another. With `likely_hit` == 0, every sampled depth's slot; else the hit is expected to end
  // near `likely_hit` blocks (a turn repeating that much of an earlier one), and only the probes of a
  // search ending there, and the head-index slots of the walk after it, are loaded. Either way the
  // result of add is the same.
  void prefetch(const std::vector<uint64_t>& ids, size_t likely_hit = 0) const;
  // Finds the request's hit prefix and adds the rest of its blocks.
  Placement add(const std::vector<uint64_t>& ids);
  int64_t unique_blocks() const { return static_cast<int64_t>(node_id_.size()); }

 private:
  static constexpr size_t kSampleStride = 16;
  static constexpr uint32_t kNone = IdIndex::kAbsent;

  struct Run {
    uint32_t first;   // its first node
    uint32_t parent;  // the node it hangs below, kNone for a root
  };

  // The deepest seen node among the request's sampled depths, or kNone; sets `depth` to its position.
  uint32_t deepest_sample(const std::vector<uint64_t>& ids, size_t& depth) const;
  // From `node` at `depth` of the request, follows the request's ids through the forest as far as they
  // go; returns the depth reached and leaves `node` there. Clears `consistent` on a prefix violation.
  size_t walk(const std::vector<uint64_t>& ids, uint32_t& node, size_t depth, bool& consistent) const;
  void append_run(const std::vector<uint64_t>& ids, size_t from, uint32_t parent);

  ChunkedIds node_id_;  // node index -> block id; a run's nodes are consecutive
  std::vector<Run, HugePageAllocator<Run>> runs_;
  IdIndex heads_;    // first id of each run -> run
  IdIndex samples_;  // ids at depths 15, 31, 47, ... -> node
};

}  // namespace kvtier
