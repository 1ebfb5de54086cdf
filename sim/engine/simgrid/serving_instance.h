// One model instance serving requests, simulated: the scheduler (sim/serving/scheduler.h) on SimGrid.
//
// The scheduler makes every serving decision; this actor gives it SimGrid's clock and the platform's links.
// A planned step lasts what the cost model says (plus any dequantize/quantize work queued by transfers),
// as a simulated sleep. Loads and stores are SimGrid Comms on the platform's links, so they overlap compute
// and share bandwidth; stores go through offload-worker queues (store_queue.h). When nothing can run, the
// actor waits for the next arrival or for any transfer to end.
#pragma once

#include <simgrid/s4u.hpp>
#include <span>
#include <unordered_map>
#include <vector>

#include "sim/engine/metrics.h"
#include "sim/engine/simgrid/platform.h"
#include "sim/serving/scheduler.h"
#include "sim/engine/simgrid/store_queue.h"

namespace kvtier {

struct InstanceConfig : SchedulerConfig {
  std::vector<Medium> tier_media;  // where each cache tier lives
};

// What the sampler reads while the instance runs.
struct InstanceState : SchedulerState {
  int64_t transfers = 0;  // SimGrid Comms started for loads
};

class ServingInstance : private ServingBackend {
 public:
  ServingInstance(InstanceConfig config, const CostModel& cost, Platform& platform, TieredCache& cache,
                  ReplayDriver& driver, std::vector<RequestRecord>& records);
  void run();  // the actor's body
  InstanceState& state() { return state_; }
  int64_t store_transfers() const { return stores_.transfers_started(); }

 private:
  double now() const override;
  LoadHandle start_load(std::span<const double> bytes_by_tier) override;
  bool load_done(LoadHandle load) override;
  void cancel_load(LoadHandle load) override;
  void start_store(int from_tier, int to_tier, double bytes) override;
  bool wait_for_work(const Decision& decision);

  std::vector<Medium> tier_media_;
  Platform& platform_;
  InstanceState state_;
  StoreQueues stores_;  // demotions and write-throughs, nobody waits for them
  std::unordered_map<LoadHandle, std::vector<simgrid::s4u::CommPtr>> loads_;
  LoadHandle next_load_ = 0;
  Scheduler scheduler_;  // last: it holds references to the members above
};

}  // namespace kvtier
