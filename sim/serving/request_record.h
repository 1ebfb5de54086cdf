// What happened to one request, from arrival to completion: the scheduler (scheduler.h) writes it as it
// decides, whichever clock drives it, and the metrics (sim/engine/metrics.h) summarise and write it.
#pragma once

#include <cstdint>
#include <vector>

namespace kvtier {

struct RequestRecord {
  uint64_t id = 0;
  int64_t session_id = -1;
  int32_t turn = 0;
  double arrival_s = 0;
  double admitted_s = -1;  // left the queue: its KV was placed in HBM
  double load_wait_s = 0;  // waiting for cached KV to arrive from lower tiers
  double prefill_start_s = -1;
  double first_token_s = -1;
  double completion_s = -1;
  // Disaggregated serving: when its prefill instance emitted the first token, which reached the user with
  // its KV on the decode instance at first_token_s (sim/cluster/handoff_ledger.h); -1 otherwise.
  double prefill_end_s = -1;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  std::vector<int64_t> hit_tokens;  // per tier, tier 0 = HBM
  int64_t recomputed_tokens = 0;    // prefilled rather than loaded
  // Where its time to first token went, beside queueing (admitted_s - arrival_s): the wait for its load,
  // per lower tier (tier 0's entry is 0), and the steps that ran its prefill chunks, split into their
  // compute and their (de)quantization in the proportions the cost model planned. ttft_parts() adds them up.
  std::vector<double> load_wait_by_tier;
  double prefill_s = 0;
  double conversion_s = 0;
  int32_t preemptions = 0;
  bool rejected = false;  // never served: its KV can never fit in HBM, or it has no input tokens

  bool completed() const { return completion_s >= 0; }
  double ttft() const { return first_token_s - arrival_s; }
  // Time per output token after the first.
  double tpot() const {
    if (output_tokens <= 1) return 0;
    return (completion_s - first_token_s) / static_cast<double>(output_tokens - 1);
  }
};

}  // namespace kvtier
