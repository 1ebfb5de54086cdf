// Every LRU capacity's prefix hit rate in one pass over a trace (Mattson et al.'s stack distances).
//
// LRU has the inclusion property: the cache of C blocks always holds the C most recently used blocks of
// one "recency stack", whatever C is. Replaying request by request as the tiered cache does (admit, then
// release the chain last block first), the stack after a request is its chain b1..bn on top, in order,
// followed by the earlier stack without those blocks; a capacity C holds its top C blocks (a chain longer
// than C keeps its first C). Block bi is cached at capacity C if its depth in the stack before the request
// is at most C, and it is part of the prefix hit if b1..bi all are: if C >= max(depth(b1..bi)). So each
// request adds, for every i, one hit block at all capacities of at least that running maximum: a histogram
// over depths, summed cumulatively, gives hits at every capacity.
//
// Depths come from a Fenwick tree over stamps (each cached block holds its latest stamp; its depth is the
// number of blocks with a stamp at least its own), so a trace of N block accesses costs O(N log N).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace kvtier {

class LruCurve {
 public:
  // Records one request. block_tokens[i] is the number of input tokens block i covers.
  void add(std::span<const uint64_t> block_ids, std::span<const int64_t> block_tokens);

  // Hits (blocks, tokens) of an LRU cache of `capacity_blocks`. INT64_MAX: an infinite cache, the
  // theoretical maximum (a block hits if its whole prefix was seen before).
  int64_t hit_blocks(int64_t capacity_blocks) const;
  int64_t hit_tokens(int64_t capacity_blocks) const;
  int64_t total_blocks() const { return total_blocks_; }
  int64_t total_tokens() const { return total_tokens_; }
  int64_t distinct_blocks() const { return static_cast<int64_t>(stamp_of_.size()); }

 private:
  int64_t depth(uint32_t stamp) const;
  void fenwick_add(uint32_t stamp, int delta);
  int64_t fenwick_prefix(uint32_t stamp) const;  // blocks with a stamp <= `stamp`
  uint32_t next_stamp();
  void compact();

  std::unordered_map<uint64_t, uint32_t> stamp_of_;  // block -> its latest stamp (1-based)
  std::vector<int32_t> fenwick_;                     // 1-based counts of live stamps
  std::vector<uint64_t> block_at_;                   // stamp -> block holding it, for compaction
  uint32_t last_stamp_ = 0;
  // hits_by_depth_[d]: hit blocks (tokens) at every capacity >= d; d = 0 unused.
  std::vector<int64_t> hit_blocks_by_depth_;
  std::vector<int64_t> hit_tokens_by_depth_;
  std::vector<int64_t> depths_;  // scratch, per request
  int64_t total_blocks_ = 0;
  int64_t total_tokens_ = 0;
};

}  // namespace kvtier
