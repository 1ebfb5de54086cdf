#include "sim/cache/hit_rate.h"

#include <algorithm>
#include <span>

#include "sim/core/checked_math.h"

namespace kvtier {

void tokens_per_block(const Request& request, int64_t block_tokens, std::vector<int64_t>& out) {
  out.clear();
  for (size_t i = 0; i < request.block_ids.size(); ++i) {
    if (request.input_tokens <= 0) {
      out.push_back(block_tokens);
    } else {
      // Blocks past the input hold none of it, however far past: i × block_tokens may leave int64_t.
      std::optional<int64_t> before = checked_mul(static_cast<int64_t>(i), block_tokens);
      int64_t remaining = before ? request.input_tokens - *before : 0;
      out.push_back(std::clamp<int64_t>(remaining, 0, block_tokens));
    }
  }
}

HitCount ReplayResult::hits() const {
  HitCount sum;
  for (const HitCount& tier : hits_by_tier) {
    sum.blocks += tier.blocks;
    sum.tokens += tier.tokens;
  }
  return sum;
}

CacheReplay::CacheReplay(std::vector<TierSpec> tiers) : cache_(tiers) {
  for (const TierSpec& tier : tiers) result_.tier_names.push_back(tier.name);
  result_.hits_by_tier.resize(tiers.size());
}

void CacheReplay::add(const Request& request) {
  tokens_per_block(request, cache_.tier(0).block_tokens, tokens_);
  ++result_.requests;
  result_.total.blocks += static_cast<int64_t>(request.block_ids.size());
  for (int64_t tokens : tokens_) result_.total.tokens += tokens;

  std::span<const uint64_t> chain(request.block_ids);
  size_t fits =
      static_cast<size_t>(std::min<int64_t>(cache_.capacity_blocks(0), static_cast<int64_t>(chain.size())));
  if (fits < chain.size()) ++result_.truncated_requests;
  cache_.admit(chain.first(fits), admission_);
  const PrefixHit& prefix = admission_.prefix;
  for (int64_t i = 0; i < prefix.hit_blocks; ++i) {
    HitCount& tier = result_.hits_by_tier[prefix.tier_of_block[i]];
    tier.blocks += 1;
    tier.tokens += tokens_[i];
  }
  cache_.release(admission_);
}

ReplayResult CacheReplay::result() const {
  ReplayResult result = result_;
  result.traffic = cache_.traffic();
  return result;
}

std::vector<CurvePoint> hit_rate_curve(const std::vector<Request>& requests, const TierSpec& tier,
                                       const std::vector<int64_t>& capacities_blocks) {
  std::vector<CurvePoint> points;
  if (tier.policy == PolicyKind::kLru) {
    LruCurve curve;
    std::vector<int64_t> tokens;
    for (const Request& request : requests) {
      tokens_per_block(request, tier.block_tokens, tokens);
      curve.add(request.block_ids, tokens);
    }
    for (int64_t capacity : capacities_blocks) {
      points.push_back({capacity, {curve.hit_blocks(capacity), curve.hit_tokens(capacity)}});
    }
    return points;
  }
  for (int64_t capacity : capacities_blocks) {
    TierSpec sized = tier;
    std::optional<int64_t> bytes = checked_mul(capacity, tier.bytes_per_block());
    if (!bytes) {
      throw ConfigError("a cache of " + std::to_string(capacity) + " blocks of " +
                        std::to_string(tier.bytes_per_block()) + " B is more than " +
                        std::to_string(kMaxCount) + " B");
    }
    sized.capacity_bytes = *bytes;
    CacheReplay replay({sized});
    for (const Request& request : requests) replay.add(request);
    points.push_back({capacity, replay.result().hits()});
  }
  return points;
}

}  // namespace kvtier
