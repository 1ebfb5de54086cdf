// The scheduler's only view of time and links: what differs between the simulator and a GPU.
//
// The scheduler (scheduler.h) decides; a backend tells it the time and moves KV between tiers. The
// simulator's backend is SimGrid (sim/engine/serving_instance.h: the clock is SimGrid's, a transfer is a
// set of Comms on the platform's links); a hardware backend reads a real clock and issues copies. Tiers are
// the cache's (0 = HBM); the backend knows where each lives.
//
// Loads are what a request waits for: the blocks its admission promotes from lower tiers, started as one
// load per request and named by a handle. Stores (demotions, write-throughs) are background work nobody
// waits for; the backend may queue and batch them, and an idle engine also wakes when one finishes.
//
// A backend that holds real KV (kvtier-hw serve) also needs to know which blocks move, not only how many
// bytes: it is told of every call the scheduler makes on the cache, and repeats them on its own store. The
// cache's state is a function of these calls alone (admissions, releases, capacity changes, in order), so
// a store that repeats them places every block where the cache model does.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include "sim/core/transfer_log.h"

namespace kvtier {

using LoadHandle = int64_t;

class ServingBackend {
 public:
  virtual ~ServingBackend() = default;

  // Seconds since the serving started.
  virtual double now() const = 0;
  // Starts bringing bytes_by_tier[t] bytes (in tier t's layout) from each lower tier t into HBM for the
  // request `request_id`'s admission; index 0 is unused and at least one entry is positive.
  virtual LoadHandle start_load(std::span<const double> bytes_by_tier, uint64_t request_id) = 0;
  // Whether every transfer of the load has finished. Once it returns true the handle is spent: the
  // scheduler neither asks about it again nor cancels it.
  virtual bool load_done(LoadHandle load) = 0;
  // Abandons a load that is not done (its request was preempted); the handle is spent.
  virtual void cancel_load(LoadHandle load) = 0;
  // Disaggregated serving: starts waiting for the KV of a request prefilled on another instance
  // (Request::prefilled_elsewhere), which arrives into the blocks its admission pinned in HBM; the handle
  // is done once all of it has landed. A backend that serves no such request need not implement it.
  virtual LoadHandle receive_prefilled_kv(uint64_t /*request_id*/) {
    throw std::logic_error("this serving backend cannot receive KV prefilled elsewhere");
  }
  // Queues a background copy from one tier to another, of `bytes` as the link carries them: a copy out of
  // HBM in the destination's layout (the GPU converts it first), any other in the source's. `cause` is the
  // id of the request whose admission made the room or placed the block, or kNoRequest
  // (sim/core/transfer_log.h) for an eviction of HBM's cache area shrinking.
  virtual void start_store(int from_tier, int to_tier, double bytes, int64_t cause) = 0;

  // The cache admitted a request's blocks (reported before the admission's transfers start). Under the
  // load policy `breakeven`, hits of the tiers flagged in recompute_tier are recomputed, not loaded.
  virtual void cache_admitted(uint64_t /*request_id*/, std::span<const uint64_t> /*block_ids*/,
                              const std::vector<bool>& /*recompute_tier*/) {}
  // The cache released the request's blocks (it completed, or was preempted).
  virtual void cache_released(uint64_t /*request_id*/) {}
  // The cache accepted a new capacity for a tier (HBM's cache area, as decode KV grows and shrinks).
  virtual void cache_capacity_set(int /*tier*/, int64_t /*bytes*/) {}
};

}  // namespace kvtier
