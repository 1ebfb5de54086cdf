// The fast hit-rate mode: replay requests through the cache alone, with no timing.
//
// Each request is admitted and released at once, so nothing stays pinned between requests. A request
// longer than tier 0 keeps only its first capacity-many blocks (the rest cannot be cached next to it) and
// counts as truncated; its hits are counted over the blocks admitted. For LRU at many capacities,
// LruCurve gives the same numbers in one pass; LruCurve.MatchesTieredCacheReplay holds the two together.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/cache/cache_event.h"
#include "sim/cache/lru_curve.h"
#include "sim/workload/request.h"
#include "sim/cache/tier_spec.h"
#include "sim/cache/tiered_cache.h"

namespace kvtier {

// Input tokens covered by each block: block_tokens each, the last one partial. A request whose
// input_tokens is unknown (0) counts whole blocks.
void tokens_per_block(const Request& request, int64_t block_tokens, std::vector<int64_t>& out);

struct HitCount {
  int64_t blocks = 0;
  int64_t tokens = 0;
};

struct ReplayResult {
  std::vector<std::string> tier_names;
  int64_t requests = 0;
  int64_t truncated_requests = 0;
  HitCount total;                      // every block and token requested
  std::vector<HitCount> hits_by_tier;  // prefix hits, by the fastest tier that held the block
  TrafficTotals traffic;

  HitCount hits() const;
};

class CacheReplay {
 public:
  explicit CacheReplay(std::vector<TierSpec> tiers);

  void add(const Request& request);
  ReplayResult result() const;
  const TieredCache& cache() const { return cache_; }

 private:
  TieredCache cache_;
  ReplayResult result_;
  Admission admission_;
  std::vector<int64_t> tokens_;
};

// One point of a single-tier hit-rate curve.
struct CurvePoint {
  int64_t capacity_blocks = 0;
  HitCount hits;
};

// Hits of a one-tier cache at each capacity: LRU from one LruCurve pass, other policies by one replay per
// capacity. `tier` gives the layout, block size and policy; its capacity is ignored. Throws ConfigError for
// a capacity whose bytes leave int64_t.
std::vector<CurvePoint> hit_rate_curve(const std::vector<Request>& requests, const TierSpec& tier,
                                       const std::vector<int64_t>& capacities_blocks);

}  // namespace kvtier
