// One model instance serving requests: a vLLM-style engine loop as a SimGrid actor.
//
// Each iteration takes the requests the replay driver has ready, admits them in arrival order while the
// cache can pin their KV in HBM (tier 0), starts loads for prefix blocks that hit in lower tiers, and runs
// one engine step: continuous batching under a token budget, chunked prefill beside decode. The step
// lasts what the cost model says (plus any dequantize/quantize work queued by loads and stores), as a
// simulated sleep. Loads and stores are SimGrid Comms on the platform's links, so they overlap compute and
// share bandwidth. A request waits for its loads before its prefill starts, or, with layer-wise overlap,
// prefills at once and emits its first token no earlier than its loads finish plus one layer of compute.
// Decode KV grows in HBM outside the cache; the cache's HBM area shrinks to match, and when even the
// pinned blocks no longer fit, the newest running request is preempted (its blocks stay cached).
#pragma once

#include <deque>
#include <memory>
#include <simgrid/s4u.hpp>
#include <vector>

#include "breakeven.h"
#include "cost_model.h"
#include "metrics.h"
#include "platform.h"
#include "replay.h"
#include "store_queue.h"
#include "tiered_cache.h"

namespace kvtier {

struct InstanceConfig {
  int64_t max_batch_tokens = 8192;  // token budget of one step (prefill chunks + one per decode)
  int64_t max_running = 256;        // sequences in the batch at once
  double kv_space_bytes = 0;        // HBM left for KV after weights and activations, all GPUs together
  bool layerwise_overlap = false;
  double dequantize_bytes_per_s = 0;  // GPU rate converting a lower tier's layout to HBM's (read + write)
  double quantize_bytes_per_s = 0;
  std::vector<Medium> tier_media;  // where each cache tier lives
  // Load policy: with recompute_when_faster, a request recomputes the hits of a lower tier whenever
  // recomputing them would take less time than loading them (the break-even, per request, without
  // contention); otherwise every hit is loaded, as vLLM with LMCache does.
  bool recompute_when_faster = false;
  std::vector<LoadPath> tier_load_paths;  // per tier; tier 0's is unused
};

// What the sampler reads while the instance runs.
struct InstanceState {
  int64_t queued = 0;
  int64_t running = 0;
  double decode_kv_bytes = 0;
  std::vector<int64_t> hits_since_sample;  // hit tokens per tier since the last sample
  int64_t input_since_sample = 0;
  int64_t steps = 0;      // engine steps run
  int64_t transfers = 0;  // SimGrid Comms started
};

class ServingInstance {
 public:
  ServingInstance(InstanceConfig config, const CostModel& cost, Platform& platform, TieredCache& cache,
                  ReplayDriver& driver, std::vector<RequestRecord>& records);
  ~ServingInstance();
  void run();  // the actor's body
  InstanceState& state() { return state_; }
  int64_t store_transfers() const { return stores_.transfers_started(); }

 private:
  struct Sequence;
  class EventCollector;

  void take_arrivals();
  void admit_waiting();
  bool admit(Sequence& seq);
  void choose_loads(Sequence& seq);
  void start_transfers(Sequence* waiter);
  void finish_loads();
  bool wait_for_work();
  void step();
  double plan_step(std::vector<int64_t>& chunks);
  void apply_step(const std::vector<int64_t>& chunks);
  void complete(Sequence& seq);
  void fit_decode_kv();
  void preempt_newest();
  void reject_unfittable();
  RequestRecord& record(const Sequence& seq);

  InstanceConfig config_;
  const CostModel& cost_;
  Platform& platform_;
  TieredCache& cache_;
  ReplayDriver& driver_;
  std::vector<RequestRecord>& records_;
  InstanceState state_;
  std::unique_ptr<EventCollector> events_;
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;  // admitted: loading, prefilling or decoding
  StoreQueues stores_;                              // demotions and write-throughs, nobody waits for them
  double gpu_overhead_s_ = 0;                       // conversion work to add to the next step
};

}  // namespace kvtier
