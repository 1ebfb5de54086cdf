// The serving scheduler: every decision of a vLLM-style engine loop, with no clock of its own.
//
// Each iteration it takes the requests the replay driver has ready (a request with no input tokens is
// rejected at once: there is nothing to prefill), notes loads that finished, and admits waiting requests
// in arrival order while the cache can pin their KV in HBM (tier 0). Admission counts the prefix hits per
// tier and chooses, per tier, to load the hits or recompute them (always load; or, with
// recompute_when_faster, recompute whenever the cost model says that is faster than the tier's load path);
// the cache's events become one load the request waits for and background stores. Then it plans a step:
// continuous batching under a token budget, every decode first (one token each), then prefill chunks from
// what is left of the budget, oldest request first. A request waits for its load before it prefills, or,
// with layer-wise overlap, prefills at once and emits its first token no earlier than its load finishes.
// After a step, decode KV grows in HBM outside the cache; the cache's HBM area shrinks to match, and while
// even the pinned blocks do not fit, the newest running request is preempted (its blocks stay cached; it
// queues again at the front and is recomputed). When nothing runs and the head of the queue still does not
// fit, it never will: it is rejected.
//
// Disaggregated serving: a request prefilled on another instance (Request::prefilled_elsewhere) is
// admitted like any other, its blocks pinned in HBM, but nothing is loaded from the lower tiers nor
// prefilled: it waits for its KV from the prefill instance (ServingBackend::receive_prefilled_kv), its
// first token arriving with it, then decodes. Preempted, it forgets where it came from and is recomputed
// here.
//
// The scheduler never waits and never measures time: its ServingBackend (serving_backend.h) gives the time
// and runs the transfers, and whoever drives it runs the steps it plans. The simulator (ServingInstance)
// sleeps each step for the cost model's time on SimGrid's clock; a GPU loop runs the step's kernels. Both
// drive it the same way:
//
//   while (!scheduler.finished()) {
//     (let background stores make progress)
//     const Decision& d = scheduler.decide();
//     kStep:     run d.step, then scheduler.finish_step();
//     kWait:     wait until d.next_arrival_s or until a load in d.awaited_loads or a store ends; with
//                neither to wait for, stop;
//     kRejected: nothing;
//     scheduler.end_iteration();
//   }
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "sim/cache/tiered_cache.h"
#include "sim/core/breakeven.h"
#include "sim/core/calibration.h"
#include "sim/core/cost_model.h"
#include "sim/serving/request_log.h"
#include "sim/serving/serving_backend.h"
#include "sim/serving/shared_tier.h"
#include "sim/serving/step_plan.h"
#include "sim/workload/replay.h"

namespace kvtier {

struct SchedulerConfig {
  int64_t max_batch_tokens = 8192;  // token budget of one step (prefill chunks + one per decode)
  int64_t max_running = 256;        // sequences in the batch at once
  double kv_space_bytes = 0;        // HBM left for KV after weights and activations, all GPUs together
  bool layerwise_overlap = false;
  // Per tier: the GPUs' rate converting its layout to HBM's (load) and back (store), over bytes read plus
  // written; tier 0's is unused.
  std::vector<ConversionRates> tier_conversions;
  // Load policy: with recompute_when_faster, a request recomputes the hits of a lower tier whenever
  // recomputing them would take less time than loading them (the break-even, per request, without
  // contention); otherwise every hit is loaded, as vLLM with LMCache does.
  bool recompute_when_faster = false;
  std::vector<LoadPath> tier_load_paths;  // per tier; tier 0's is unused
  // Told of every event of the cache as well (not owned; null for none): a cluster's router follows each
  // instance's cache this way.
  CacheEventSink* cache_observer = nullptr;
  // A tier below the cache's, shared with other instances (not owned; null for none): a cluster's KV pool
  // (shared_tier.h). It counts as the tier after the cache's last, in records, tier_conversions and
  // tier_load_paths, and in the backend's loads and stores.
  SharedTier* shared_tier = nullptr;
  // Whether StepPlan::decodes lists each decode (a GPU loop runs them). A simulator that only needs the
  // step's time leaves it off: a run of decode-only steps is then planned and applied from the batch's
  // totals, without visiting each sequence (see DecodeRun in scheduler.cpp).
  bool list_decodes = true;
  // Whether the backend takes each block's store apart (it records them one by one). Off, the stores of
  // one cache call arrive one per path and kind, their bytes summed, where that changes nothing else: no
  // shared tier, no cache observer and no conversion between the tiers' layouts.
  bool store_each_block = true;
};

// The figures a sampler reads while the scheduler runs (it may reset the since-sample counters).
struct SchedulerState {
  int64_t queued = 0;   // as of the end of the last iteration
  int64_t running = 0;  // likewise
  double decode_kv_bytes = 0;
  std::vector<int64_t> hits_since_sample;  // hit tokens per tier since the last sample
  int64_t input_since_sample = 0;
  int64_t steps = 0;  // engine steps run
  int64_t decode_run_steps =
      0;              // of those, planned from a decode run's totals (SchedulerConfig::list_decodes)
  double busy_s = 0;  // the time those steps ran
};

class Scheduler {
 public:
  // Every reference must outlive the scheduler. It receives the cache's events while it exists; a record
  // per request is added to `records` (and settled there once final), and `state` is kept current.
  Scheduler(SchedulerConfig config, const CostModel& cost, TieredCache& cache, ReplayDriver& driver,
            ServingBackend& backend, RequestLog& records, SchedulerState& state);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // The replay is over and every request has left.
  bool finished() const;
  // One iteration's decision (valid until the next call): arrivals, finished loads and admissions first.
  const Decision& decide();
  // The step of the last kStep decision has run (the clock is at its end): sequences advance, finished
  // ones complete, and the cache's HBM area shrinks to the decode KV's growth.
  void finish_step();
  // Publishes the queue and batch sizes to the state.
  void end_iteration();

  int64_t waiting_count() const { return static_cast<int64_t>(waiting_.size()); }
  int64_t running_count() const { return static_cast<int64_t>(running_.size()); }

 private:
  struct Sequence;
  class EventCollector;

  void take_arrivals();
  void reject(Sequence& seq);
  void admit_waiting();
  bool admit(Sequence& seq);
  bool may_fit_now(const Sequence& head) const;
  void receive_prefilled(Sequence& seq);
  void count_hits(Sequence& seq);
  void choose_loads(Sequence& seq);
  void start_transfers(Sequence* waiter);
  void move_events(Sequence* waiter, int64_t cause);
  void move_flows(Sequence* waiter, int64_t cause);
  bool loads_from(const Sequence* waiter, int tier) const;
  void finish_loads();
  void split_load_wait(const Sequence& seq);
  bool plan_step();
  void apply_step();
  void complete(Sequence& seq);
  void plan_decode_run();
  void price_step();
  void apply_decode_run();
  void remove_completed();
  void sync_decoders();
  void end_decode_run();
  void fit_decode_kv();
  void preempt_newest();
  RequestRecord& record(const Sequence& seq);
  // The cache's tiers, and the shared tier after them when there is one.
  int tier_count() const { return cache_.tier_count() + (config_.shared_tier != nullptr ? 1 : 0); }
  const KvLayout& layout_of(int tier) const;
  void load_from_shared_tier(const Sequence* waiter);
  void write_to_shared_tier(uint64_t block, int64_t cause);
  void convert_shared(double blocks, bool load);

  SchedulerConfig config_;
  const CostModel& cost_;
  TieredCache& cache_;
  ReplayDriver& driver_;
  ServingBackend& backend_;
  RequestLog& records_;
  SchedulerState& state_;
  std::unique_ptr<EventCollector> events_;
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;  // admitted: loading, prefilling or decoding
  std::vector<double> load_bytes_;                  // start_transfers()'s per-tier totals
  // [from × tier_count + to]: a move between the cache's tiers converts on the GPU (to or from HBM, the
  // layouts differing).
  std::vector<uint8_t> converts_;
  int64_t loading_ = 0;  // sequences of the batch waiting for a load
  // The cache's events taken as totals per flow (SchedulerConfig::store_each_block), and the totals
  // already moved.
  bool moves_by_flow_ = false;
  TrafficTotals moved_;
  double conversion_s_ = 0;                         // (de)quantize work to add to the next step
  StepWork step_work_;                              // plan_step()'s, its buffers kept between steps
  std::vector<const Sequence*> prefill_candidates_;  // plan_step()'s, likewise
  // Decode-only steps whose decoders do not change, planned and applied from totals (the sequences' own
  // `decoded` lag by `pending` steps until sync_decoders()). Only where exact: see may_run_decodes_.
  struct DecodeRun {
    bool steady = false;  // the next step, if nothing else changes, decodes these decoders alone
    int64_t decoders = 0;
    int64_t context = 0;     // their KV tokens summed, for the next step
    int64_t pending = 0;     // steps not yet added to each decoder's `decoded`
    int64_t steps_left = 0;  // steps until the first of them produces its last token
  };
  DecodeRun run_;
  bool may_run_decodes_ = false;
  double step_started_s_ = 0;                       // when the step of the last kStep decision began
  int64_t reported_capacity_ = -1;                  // HBM's cache area as last told to the backend
  // The record of the queue's head when the cache last refused it (a record, not the Sequence's address,
  // which a later arrival may reuse), and the cache's room_generation() then.
  size_t refused_record_ = SIZE_MAX;
  uint64_t refused_at_ = 0;
  Decision decision_;
};

}  // namespace kvtier
