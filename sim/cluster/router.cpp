#include "sim/cluster/router.h"

#include <algorithm>
#include <array>
#include <bit>
#include <stdexcept>

namespace kvtier {

namespace {

constexpr std::array<RouterPolicy, 4> kPolicies = {RouterPolicy::kRoundRobin, RouterPolicy::kLeastLoaded,
                                                   RouterPolicy::kSessionSticky, RouterPolicy::kPrefixAware};

// Fewer requests, then fewer tokens active.
bool lighter(const InstanceLoad& a, const InstanceLoad& b) {
  return a.requests != b.requests ? a.requests < b.requests : a.active_tokens < b.active_tokens;
}

}  // namespace

const char* router_policy_name(RouterPolicy policy) {
  switch (policy) {
    case RouterPolicy::kRoundRobin:
      return "round_robin";
    case RouterPolicy::kLeastLoaded:
      return "least_loaded";
    case RouterPolicy::kSessionSticky:
      return "session_sticky";
    case RouterPolicy::kPrefixAware:
      return "prefix_aware";
  }
  return "?";
}

std::span<const RouterPolicy> router_policies() {
  return kPolicies;
}

Router::Router(RouterConfig config, int instances, std::vector<bool> exclusive_tiers)
    : config_(config),
      instances_(instances),
      exclusive_tiers_(std::move(exclusive_tiers)),
      instance_tiers_(instances),
      words_((static_cast<size_t>(instances) + 63) / 64),
      alive_(words_),
      matched_(instances) {
  if (instances < 1) throw std::invalid_argument("a router needs at least one instance");
}

int Router::route(const Request& request, double now, std::span<const InstanceLoad> loads) {
  switch (config_.policy) {
    case RouterPolicy::kRoundRobin: {
      int chosen = next_round_robin_;
      next_round_robin_ = (next_round_robin_ + 1) % instances_;
      return chosen;
    }
    case RouterPolicy::kLeastLoaded:
      return least_loaded(loads);
    case RouterPolicy::kSessionSticky: {
      if (request.session_id < 0) return least_loaded(loads);
      auto [it, first_turn] = session_instance_.try_emplace(request.session_id, 0);
      if (first_turn) it->second = least_loaded(loads);
      return it->second;
    }
    case RouterPolicy::kPrefixAware:
      return least_cost(request, now, loads);
  }
  return 0;
}

int Router::least_loaded(std::span<const InstanceLoad> loads) const {
  return static_cast<int>(std::min_element(loads.begin(), loads.end(), lighter) - loads.begin());
}

int Router::least_cost(const Request& request, double now, std::span<const InstanceLoad> loads) {
  cached_prefixes(request.block_ids, now, matched_);
  const auto blocks = static_cast<double>(request.block_ids.size());
  const auto block_tokens = static_cast<double>(config_.block_tokens);
  int best = 0;
  double best_cost = 0;
  for (int i = 0; i < instances_; ++i) {
    double prefill = blocks - static_cast<double>(matched_[i]);
    double active = static_cast<double>(loads[i].active_tokens) / block_tokens;
    double cost = config_.prefill_weight * prefill + active;
    if (i == 0 || cost < best_cost || (cost == best_cost && lighter(loads[i], loads[best]))) {
      best = i;
      best_cost = cost;
    }
  }
  return best;
}

void Router::on_cache_event(int instance, double now, const CacheEvent& event) {
  if (config_.staleness_s <= 0) {
    apply(instance, event);
    return;
  }
  pending_.push_back({now + config_.staleness_s, instance, event});
}

void Router::see_events(double now) {
  while (!pending_.empty() && pending_.front().seen_s <= now) {
    apply(pending_.front().instance, pending_.front().event);
    pending_.pop_front();
  }
}

// The tiers holding the block after the event: it lands in to_tier; it leaves from_tier when dropped or
// demoted, and when promoted out of an exclusive tier.
void Router::apply(int instance, const CacheEvent& e) {
  auto& tiers = instance_tiers_[instance];
  uint32_t before = 0;
  auto it = tiers.find(e.block);
  if (it != tiers.end()) before = it->second;
  uint32_t after = before;
  if (e.to_tier >= 0) after |= 1u << e.to_tier;
  bool leaves = e.kind == CacheEventKind::kDrop || e.kind == CacheEventKind::kDemote ||
                (e.kind == CacheEventKind::kPromote && exclusive_tiers_.at(e.from_tier));
  if (leaves && e.from_tier >= 0) after &= ~(1u << e.from_tier);
  if (after == before) return;
  if (after == 0) {
    tiers.erase(it);
  } else if (it == tiers.end()) {
    tiers.emplace(e.block, after);
  } else {
    it->second = after;
  }
  if ((before == 0) == (after == 0)) return;
  uint64_t* words = before == 0 ? add_holder_words(e.block) : holder_words(e.block);
  words[instance / 64] ^= uint64_t{1} << (instance % 64);
}

uint64_t* Router::holder_words(uint64_t block) {
  auto it = holder_index_.find(block);
  return it == holder_index_.end() ? nullptr : &holders_[it->second];
}

uint64_t* Router::add_holder_words(uint64_t block) {
  auto [it, added] = holder_index_.try_emplace(block, holders_.size());
  if (added) holders_.resize(holders_.size() + words_, 0);
  return &holders_[it->second];
}

// Walks the request's blocks while any instance still holds every block so far: an instance's prefix
// ends at the first block it lacks.
void Router::cached_prefixes(std::span<const uint64_t> block_ids, double now, std::vector<int64_t>& matched) {
  see_events(now);
  matched.assign(instances_, 0);
  std::fill(alive_.begin(), alive_.end(), ~uint64_t{0});
  if (instances_ % 64 != 0) alive_.back() = (uint64_t{1} << (instances_ % 64)) - 1;
  size_t b = 0;
  bool any = true;
  for (; b < block_ids.size() && any; ++b) {
    const uint64_t* holders = holder_words(block_ids[b]);
    any = false;
    for (size_t w = 0; w < words_; ++w) {
      uint64_t still = holders == nullptr ? 0 : alive_[w] & holders[w];
      for (uint64_t gone = alive_[w] & ~still; gone != 0; gone &= gone - 1)
        matched[w * 64 + std::countr_zero(gone)] = static_cast<int64_t>(b);
      alive_[w] = still;
      any = any || still != 0;
    }
  }
  for (size_t w = 0; w < words_; ++w) {
    for (uint64_t left = alive_[w]; left != 0; left &= left - 1)
      matched[w * 64 + std::countr_zero(left)] = static_cast<int64_t>(b);
  }
}

int64_t Router::cached_prefix_blocks(int instance, std::span<const uint64_t> block_ids, double now) {
  std::vector<int64_t> matched;
  cached_prefixes(block_ids, now, matched);
  return matched.at(instance);
}

}  // namespace kvtier
