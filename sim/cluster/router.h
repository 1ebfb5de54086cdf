// The router of a cluster of serving instances: which instance serves each request as it arrives.
//
//   round_robin     instances in turn
//   least_loaded    the fewest requests queued and running (ties: the fewest tokens active, then the
//                   lowest index)
//   session_sticky  a session's first turn goes to the least-loaded instance, its later turns to the
//                   same one; a request without a session goes to the least-loaded
//   prefix_aware    the least cost, prefill_weight x (blocks the instance would have to prefill: the
//                   request's blocks past the longest prefix the instance has cached in any tier) +
//                   (blocks of KV active on it: its queued and running requests' tokens); this is the
//                   cost of Dynamo's KV router (overlap weight x prefill blocks + decode blocks), and
//                   ties go as for least_loaded
//
// The router sees each instance's cache only through the cache's events (cache_event.h), as a KV router
// sees its workers' KV events: it keeps, per instance and block, the tiers holding it, and applies an
// event `staleness_s` after it happened. The load figures are read fresh at each decision. No clock of
// its own: the caller gives the time.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/cache/cache_event.h"
#include "sim/workload/request.h"

namespace kvtier {

enum class RouterPolicy { kRoundRobin, kLeastLoaded, kSessionSticky, kPrefixAware };

// "round_robin", "least_loaded", "session_sticky", "prefix_aware".
const char* router_policy_name(RouterPolicy policy);
std::span<const RouterPolicy> router_policies();

struct RouterConfig {
  RouterPolicy policy = RouterPolicy::kRoundRobin;
  double prefill_weight = 1;  // prefix_aware: the weight of a block to prefill against a block active
  double staleness_s = 0;     // how long after a cache event the router sees it
  int64_t block_tokens = 512;
};

// An instance's load as the router reads it when it decides.
struct InstanceLoad {
  int64_t requests = 0;       // queued and running
  int64_t active_tokens = 0;  // their input and output tokens
};

class Router {
 public:
  // `exclusive_tiers[t]`: whether tier t gives up a block it promotes to tier 0 (placement: exclusive),
  // which its promote event does not say. REQUIRES: instances >= 1.
  Router(RouterConfig config, int instances, std::vector<bool> exclusive_tiers);

  // The instance that serves `request`, given every instance's load now.
  int route(const Request& request, double now, std::span<const InstanceLoad> loads);
  // An event of `instance`'s cache at `now` (seen from now + staleness_s).
  void on_cache_event(int instance, double now, const CacheEvent& event);

  // The longest prefix of `block_ids` that `instance` holds in some tier, in blocks, as the router sees
  // it at `now`.
  int64_t cached_prefix_blocks(int instance, std::span<const uint64_t> block_ids, double now);
  // Every instance's cached_prefix_blocks() at once, into `matched` (sized to the instances).
  void cached_prefixes(std::span<const uint64_t> block_ids, double now, std::vector<int64_t>& matched);
  const RouterConfig& config() const { return config_; }
  // Whether decisions read the caches (prefix_aware): otherwise no event need be fed.
  bool follows_caches() const { return config_.policy == RouterPolicy::kPrefixAware; }

 private:
  struct PendingEvent {
    double seen_s;
    int instance;
    CacheEvent event;
  };
  void see_events(double now);
  void apply(int instance, const CacheEvent& event);
  int least_loaded(std::span<const InstanceLoad> loads) const;
  int least_cost(const Request& request, double now, std::span<const InstanceLoad> loads);
  uint64_t* holder_words(uint64_t block);  // null when no instance ever held it
  uint64_t* add_holder_words(uint64_t block);

  RouterConfig config_;
  int instances_;
  std::vector<bool> exclusive_tiers_;
  int next_round_robin_ = 0;
  std::unordered_map<int64_t, int> session_instance_;
  std::deque<PendingEvent> pending_;
  // Per instance, the tiers holding each block it holds; per block ever held, `words_` words at
  // holder_index_[block] of holders_: a bit per instance holding it in some tier.
  std::vector<std::unordered_map<uint64_t, uint32_t>> instance_tiers_;
  size_t words_;
  std::unordered_map<uint64_t, size_t> holder_index_;
  std::vector<uint64_t> holders_;
  std::vector<uint64_t> alive_;   // cached_prefix()'s scratch: instances still matching
  std::vector<int64_t> matched_;  // least_cost()'s per-instance prefix lengths
};

}  // namespace kvtier
