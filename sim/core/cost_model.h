// The compute cost model shared by the break-even analysis and the serving simulation.
//
// Prefill of `new_tokens` after `cached_tokens` already in the KV cache costs
//   linear FLOPs    2 × active_params × new_tokens
//   attention FLOPs 2 × query_heads × (qk_dim + v_dim) × layers × Σ_{i=1..new} (cached + i)
// over the achieved compute rate (GPUs × peak × prefill_mfu), floored by the time to stream the
// weights touched and the KV through HBM. Decode reads the weights and every running request's KV
// once per step (memory-bound), floored by its FLOPs. A mixed step (chunked prefill beside decode)
// adds up the FLOPs and bytes of both and takes the larger of the two times.
//
// With StepCosts (the `serving` part of a calibration, fitted to timed forward-pass steps) a step is
// priced term by term instead, as the forward pass spends it:
//   overhead + max(linear FLOPs / linear rate, weight bytes / HBM rate)
//            + Σ_chunks attention FLOPs / attention rate(keys, queries)  +  decode KV bytes / attention bandwidth
// where attention rate(keys, queries) = peak × attention_mfu / (1 + attention_half_rate_keys / keys +
// attention_half_rate_queries / queries): the kernel's throughput rises with the keys each query sees and
// with the chunk's new tokens (a short chunk fills few blocks of the GPU), and levels off. docs/cost-model.md derives
// each term. With StepCosts::attention (a calibration's serving.attention) the two attention terms give
// way to the kernel's blocks: layers × one launch over the step's decodes, then its chunks (the order
// kvtier-hw serve launches them in), as attention_cost.h prices it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "sim/core/attention_cost.h"
#include "sim/core/hardware.h"
#include "sim/core/model_card.h"
#include "sim/core/power_throttle.h"

namespace kvtier {

// The serving terms of a step's time. Fractions are of the GPUs' peak (the model's weight dtype) and HBM
// bandwidth, relative to the FLOP and byte counts of this cost model for the card they were fitted with.
struct StepCosts {
  double step_overhead_s = 0;                 // fixed time of every step (launches, the batch upload)
  double linear_mfu = 0;                      // linear layers' FLOPs over peak
  double attention_mfu = 0;                   // prefill attention's rate over peak, at many keys
  double attention_half_rate_keys = 0;        // keys at which prefill attention runs at half that rate
  double attention_half_rate_queries = 0;     // a chunk's new tokens at which it runs at half that rate
  double attention_bandwidth_efficiency = 0;  // decode attention's KV read rate over HBM bandwidth
  // When set, a step's attention is priced from the kernel's blocks instead (attention_cost.h): layers ×
  // one launch over the step's decodes, then its chunks; the four attention terms above are then unused.
  std::optional<AttentionCosts> attention = std::nullopt;
  // When set, the terms above price a step at the boost clock, and a simulated run slows compute-bound
  // steps as its GPU heats (power_throttle.h).
  std::optional<PowerThrottle> throttle = std::nullopt;
};

// One engine step's work: prefill chunks and a batch of decodes. Add in the scheduler's order (chunks,
// then decodes): the default formula sums FLOPs and bytes in that order.
struct StepWork {
  struct Chunk {
    int64_t cached_tokens = 0;
    int64_t new_tokens = 0;
  };
  std::vector<Chunk> prefills;
  int64_t decodes = 0;                   // sequences decoding one token each
  int64_t decode_context = 0;            // their KV tokens, summed
  std::vector<int64_t> decode_contexts;  // each decode's KV tokens, as add_decode recorded them

  void add_prefill(int64_t cached_tokens, int64_t new_tokens) {
    prefills.push_back({cached_tokens, new_tokens});
  }
  // One sequence decoding a token after `context_tokens` tokens of KV.
  void add_decode(int64_t context_tokens) {
    ++decodes;
    decode_context += context_tokens;
    decode_contexts.push_back(context_tokens);
  }
  // `count` sequences decoding a token each after `context_tokens` of KV in all, not itemized: enough
  // for every cost model but the one that prices attention from the kernel's blocks.
  void add_decodes(int64_t count, int64_t context_tokens) {
    decodes += count;
    decode_context += context_tokens;
  }
  int64_t tokens() const;
  // Empties the work, keeping its buffers (the scheduler reuses one StepWork for every step).
  void clear() {
    prefills.clear();
    decodes = 0;
    decode_context = 0;
    decode_contexts.clear();
  }
};

// The quantities StepCosts' rates divide, for one step: step time under StepCosts is
//   overhead + max(linear_flops / linear rate, weight_bytes / HBM rate)
//   + attention_flops / attention rate + attention_flops_per_key × half_rate_keys / attention rate
//   + attention_flops_per_query × half_rate_queries / attention rate
//   + decode_kv_bytes / attention bandwidth
// (the attention rate being that at many keys). The fit (hw/tools/step_fit.h) solves for the rates.
struct StepTerms {
  double linear_flops = 0;
  double weight_bytes = 0;
  double attention_flops = 0;          // prefill chunks' attention
  double attention_flops_per_key = 0;    // Σ chunk attention FLOPs / (cached + new) of the chunk
  double attention_flops_per_query = 0;  // Σ chunk attention FLOPs / new tokens of the chunk
  double decode_kv_bytes = 0;
};

class CostModel {
 public:
  // `kv_bytes_per_token` is that of the layout held in HBM, for the memory terms. Without `step_costs`
  // the default formula prices steps.
  CostModel(const ModelCard& model, const HardwareConfig& hardware, double kv_bytes_per_token,
            std::optional<StepCosts> step_costs = std::nullopt);
  // A flat prefill rate instead of the FLOP model (the --prefill-tokens-per-s what-if). Throws ConfigError
  // unless `tokens_per_s` is positive and finite.
  static CostModel fixed_prefill_rate(const ModelCard& model, double tokens_per_s, double kv_bytes_per_token);

  double prefill_flops(int64_t cached_tokens, int64_t new_tokens) const;
  double prefill_seconds(int64_t cached_tokens, int64_t new_tokens) const;
  // Tokens per second when prefilling `tokens` from scratch.
  double prefill_tokens_per_s(int64_t tokens) const;
  // One decode step for `batch` sequences holding `context_tokens` tokens of KV between them (with
  // block-priced attention, spread evenly over the batch).
  double decode_step_seconds(int64_t batch, int64_t context_tokens) const;
  double decode_flops(int64_t batch, int64_t context_tokens) const;

  // One engine step: the default formula, or the serving terms when the model has StepCosts.
  double step_seconds(const StepWork& work) const;
  // The default formula's roofline for `flops` of compute, `kv_bytes` of KV read or written and `tokens`
  // tokens processed (a MoE step touches at most every expert, at least the active ones for each token).
  double step_seconds(double flops, double kv_bytes, int64_t tokens) const;
  StepTerms step_terms(const StepWork& work) const;
  // Whether the step's linear layers are bound by their FLOPs rather than by reading the weights: the
  // steps that heat a GPU past its power limit (power_throttle.h). False for a fixed prefill rate.
  bool compute_bound(const StepWork& work) const;
  // The step's attention, every layer, priced from the kernel's blocks. REQUIRES StepCosts::attention.
  double block_attention_seconds(const StepWork& work) const;
  // The attention of the step's prefill chunks alone, as the serving terms price it (0 without them): the
  // part of a step that a power throttle slows by its own factor (PowerThrottle::attention_slowdown).
  double prefill_attention_seconds(const StepWork& work) const;
  // Whether step_seconds needs each decode's context (StepWork::add_decode), not just their sum.
  bool prices_each_decode() const { return step_costs_ && step_costs_->attention; }

  double kv_bytes_per_token() const { return kv_bytes_per_token_; }
  double achieved_flops() const { return achieved_flops_; }
  double achieved_hbm_bandwidth() const { return achieved_hbm_bandwidth_; }
  // Of all the instance's GPUs: the rates StepCosts' fractions multiply.
  double peak_flops() const { return peak_flops_; }
  double hbm_bandwidth() const { return hbm_bandwidth_; }
  const std::optional<StepCosts>& step_costs() const { return step_costs_; }
  // The serving terms' power throttle, or nullopt when steps are not throttled.
  std::optional<PowerThrottle> throttle() const { return step_costs_ ? step_costs_->throttle : std::nullopt; }

 private:
  CostModel() = default;
  double attention_flops_per_pair() const;
  double attention_flops(int64_t cached_tokens, int64_t new_tokens) const;
  double weight_bytes_touched(int64_t tokens) const;
  double serving_step_seconds(const StepWork& work) const;
  // The serving terms' formula for prefill attention (StepCosts::attention_mfu and half rates).
  double formula_prefill_attention_seconds(const StepTerms& terms) const;

  ModelCard model_;
  double achieved_flops_ = 0;
  double achieved_hbm_bandwidth_ = 0;
  double peak_flops_ = 0;
  double hbm_bandwidth_ = 0;
  double kv_bytes_per_token_ = 0;
  std::optional<double> fixed_rate_;
  std::optional<StepCosts> step_costs_;
  int attention_kv_heads_ = 0;  // KV heads of one GPU, for block-priced attention
};

}  // namespace kvtier
