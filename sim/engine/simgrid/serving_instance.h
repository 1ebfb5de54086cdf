// One model instance serving requests, simulated: the scheduler (sim/serving/scheduler.h) on SimGrid.
//
// The scheduler makes every serving decision; this actor gives it SimGrid's clock and the platform's links.
// A planned step lasts what the cost model says (plus any dequantize/quantize work queued by transfers),
// as a simulated sleep; an instance that runs alone may keep its own clock instead (run_alone). Loads and
// stores are SimGrid Comms on the platform's links, so they overlap compute and share bandwidth; stores go
// through offload-worker queues (store_queue.h), the stores of one cache call as one batch. When nothing can
// run, the actor waits for the next arrival or for any transfer to end.
//
// With blocking transfers the copies go one after another, as on a serving thread that makes them: a
// cache call's stores, then its load (the GPU's TieredStore copies in that order, hw/store/transfer_run.cpp).
// A load waits until no store batch moves, and a step until no copy does.
//
// Every load and store is also logged for transfers.csv (sim/core/transfer_log.h): a load as one row per
// lower tier it reads (from when the load starts to when that tier's bytes have landed in HBM; a load
// cancelled by a preemption has no row), a store as the store queues log it (store_queue.h).
#pragma once

#include <functional>
#include <optional>
#include <simgrid/s4u.hpp>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/core/power_throttle.h"
#include "sim/core/transfer_log.h"
#include "sim/engine/metrics.h"
#include "sim/engine/simgrid/platform.h"
#include "sim/engine/simgrid/store_queue.h"
#include "sim/serving/scheduler.h"

namespace kvtier {

struct InstanceConfig : SchedulerConfig {
  std::vector<Medium> tier_media;        // where each cache tier lives
  std::vector<std::string> tier_names;  // the cache's names of the tiers, for transfers.csv
  bool blocking_transfers = false;      // instance.transfers: blocking
  // Disaggregated serving: the transfers that bring a request prefilled elsewhere its KV (a decode
  // instance waits for them), and a hook told of each step as it starts and once it has run (a prefill
  // instance streams KV layer by layer as its steps run). Either may be empty.
  std::function<std::vector<simgrid::s4u::CommPtr>(uint64_t request_id)> prefilled_kv;
  std::function<void(const StepPlan& step, bool ran)> on_step;
};

// What the sampler reads while the instance runs.
struct InstanceState : SchedulerState {
  int64_t transfers = 0;  // SimGrid Comms started for loads
};

class ServingInstance : private ServingBackend {
 public:
  // Every load and store goes to `transfers` (none when null) as it lands.
  ServingInstance(InstanceConfig config, const CostModel& cost, Platform& platform, TieredCache& cache,
                  ReplayDriver& driver, RequestLog& records, TransfersCsvWriter* transfers);
  // The actor's body; `each_iteration`, if given, is called once per iteration of the engine loop.
  void run(const std::function<void()>& each_iteration = nullptr);
  InstanceState& state() { return state_; }
  int64_t store_transfers() const { return stores_.transfers_started(); }
  // In a cluster: requests arrive when the router sends them (sim/cluster/routed_driver.h), and it rings
  // `doorbell` each time; the instance waits for the bell as well as for its transfers, and stops once
  // its driver is done.
  void listen(simgrid::s4u::Mailbox* doorbell) { doorbell_ = doorbell; }
  // The instance runs beside one other actor only, which acts at nothing of the instance's and wakes next
  // at `*others_next_wake` (set before each of its sleeps). A step or an idle wait that ends before that
  // wake advances the instance's own clock instead of SimGrid's, which catches up, exactly, before the
  // instance next needs it: a SimGrid round costs more than planning a step. Nor is a load asked after (a
  // simcall) before it could have landed, alone on its links.
  void run_alone(const double* others_next_wake) { others_next_wake_ = others_next_wake; }
  // The simulated time as the instance sees it (ahead of SimGrid's clock while it runs alone).
  double clock() const { return now(); }
  // Waits for the stores in flight to land (stores still queued are not started). The body of an actor
  // run after run() has ended.
  void finish_stores() { stores_.finish_in_flight(); }

 private:
  double now() const override;
  LoadHandle start_load(std::span<const double> bytes_by_tier, uint64_t request_id) override;
  bool load_done(LoadHandle load) override;
  void cancel_load(LoadHandle load) override;
  void start_store(int from_tier, int to_tier, double bytes, int64_t cause) override;
  LoadHandle receive_prefilled_kv(uint64_t request_id) override;
  // A cache call is reported before its stores are added: the stores queued by then are those of the
  // calls before, which are over, and start.
  void cache_admitted(uint64_t request_id, std::span<const uint64_t> block_ids,
                      const std::vector<bool>& recompute_tier) override;
  void cache_released(uint64_t request_id) override;
  void cache_capacity_set(int tier, int64_t bytes) override;
  bool wait_for_work(const Decision& decision);
  void settle_transfers();
  void write_started_transfers();
  void run_step(const StepPlan& step);
  // Advances the clock by `seconds`: on the instance's own clock when running alone allows it, else as a
  // SimGrid sleep.
  void pass(double seconds);
  bool may_pass_alone(double until) const;
  // Whether no other actor can act at `at`, the instance's clock: then a simcall that changes nothing
  // (asking after a transfer that cannot have landed) may be left out without moving anyone else.
  bool alone_at(double at) const { return others_next_wake_ != nullptr && at < *others_next_wake_; }
  // SimGrid's clock brought to the instance's, before anything of SimGrid's is used.
  void catch_up();
  // The store queues' pump and start, caught up first when they may use SimGrid.
  void pump_stores();
  void start_idle_stores();
  const std::string& tier_path(int from_tier, int to_tier) const;

  // The part of a load that one lower tier sends, or (tier kPrefilled) another instance.
  static constexpr int kPrefilled = -1;
  struct LoadPart {
    int tier = 0;
    double bytes = 0;
    std::vector<simgrid::s4u::CommPtr> comms;
  };
  struct Load {
    double start_s = 0;
    double earliest_landing_s = 0;  // it cannot have landed before: every part alone on its links
    uint64_t request_id = 0;
    std::vector<LoadPart> parts;
    std::vector<double> waiting_bytes;  // by tier, while it waits for the stores before it (blocking)
  };
  // Starts the load's copies now.
  void start_copies(Load& load, std::span<const double> bytes_by_tier);
  // Blocking transfers: starts the loads that waited for the stores before them, once none moves.
  void start_waiting_loads();

  std::vector<Medium> tier_media_;
  std::vector<std::string> tier_paths_;  // transfers.csv's path of each pair of tiers (tier_path)
  bool blocking_transfers_;
  std::function<std::vector<simgrid::s4u::CommPtr>(uint64_t)> prefilled_kv_;
  std::function<void(const StepPlan&, bool)> on_step_;
  Platform& platform_;
  InstanceState state_;
  TransfersCsvWriter* transfers_;
  size_t write_transfers_at_ = 0;  // held rows of transfers_ that call for a write
  StoreQueues stores_;  // demotions and write-throughs, nobody waits for them
  std::unordered_map<LoadHandle, Load> loads_;
  int64_t waiting_loads_ = 0;  // loads_ with waiting_bytes
  LoadHandle next_load_ = 0;
  GpuHeat heat_;  // the GPU's power state, which slows compute-bound steps
  double last_step_end_ = 0;
  const double* others_next_wake_ = nullptr;  // run_alone
  std::optional<double> ahead_s_;             // the instance's clock, while ahead of SimGrid's
  simgrid::s4u::Mailbox* doorbell_ = nullptr;
  simgrid::s4u::CommPtr bell_;  // waiting for the doorbell to ring
  void* rung_ = nullptr;        // the ring's payload (none)
  Scheduler scheduler_;  // last: it holds references to the members above
};

}  // namespace kvtier
