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
#pragma once

#include <cstdint>
#include <span>

namespace kvtier {

using LoadHandle = int64_t;

class ServingBackend {
 public:
  virtual ~ServingBackend() = default;

  // Seconds since the serving started.
  virtual double now() const = 0;
  // Starts bringing bytes_by_tier[t] bytes (in tier t's layout) from each lower tier t into HBM; index 0
  // is unused and at least one entry is positive.
  virtual LoadHandle start_load(std::span<const double> bytes_by_tier) = 0;
  // Whether every transfer of the load has finished. Once it returns true the handle is spent: the
  // scheduler neither asks about it again nor cancels it.
  virtual bool load_done(LoadHandle load) = 0;
  // Abandons a load that is not done (its request was preempted); the handle is spent.
  virtual void cancel_load(LoadHandle load) = 0;
  // Queues a background copy from one tier to another, of `bytes` as the link carries them: a copy out of
  // HBM in the destination's layout (the GPU converts it first), any other in the source's.
  virtual void start_store(int from_tier, int to_tier, double bytes) = 0;
};

}  // namespace kvtier
