// The compute cost model shared by the break-even analysis and the serving simulation.
//
// Prefill of `new_tokens` after `cached_tokens` already in the KV cache costs
//   linear FLOPs    2 × active_params × new_tokens
//   attention FLOPs 2 × query_heads × (qk_dim + v_dim) × layers × Σ_{i=1..new} (cached + i)
// over the achieved compute rate (GPUs × peak × prefill_mfu), floored by the time to stream the
// weights touched and the KV through HBM. Decode reads the weights and every running request's KV
// once per step (memory-bound), floored by its FLOPs. A mixed step (chunked prefill beside decode)
// adds up the FLOPs and bytes of both and takes the larger of the two times. docs/cost-model.md derives each
// term.
#pragma once

#include <cstdint>
#include <optional>

#include "sim/core/hardware.h"
#include "sim/core/model_card.h"

namespace kvtier {

class CostModel {
 public:
  // `kv_bytes_per_token` is that of the layout held in HBM, for the memory terms.
  CostModel(const ModelCard& model, const HardwareConfig& hardware, double kv_bytes_per_token);
  // A flat prefill rate instead of the FLOP model (the --prefill-tokens-per-s what-if). Throws ConfigError
  // unless `tokens_per_s` is positive and finite.
  static CostModel fixed_prefill_rate(const ModelCard& model, double tokens_per_s, double kv_bytes_per_token);

  double prefill_flops(int64_t cached_tokens, int64_t new_tokens) const;
  double prefill_seconds(int64_t cached_tokens, int64_t new_tokens) const;
  // Tokens per second when prefilling `tokens` from scratch.
  double prefill_tokens_per_s(int64_t tokens) const;
  // One decode step for `batch` sequences holding `context_tokens` tokens of KV between them.
  double decode_step_seconds(int64_t batch, int64_t context_tokens) const;
  double decode_flops(int64_t batch, int64_t context_tokens) const;

  // One engine step of mixed work: `flops` of compute, `kv_bytes` of KV read or written, `tokens` tokens
  // processed (a MoE step touches at most every expert, at least the active ones for each token).
  double step_seconds(double flops, double kv_bytes, int64_t tokens) const;
  double kv_bytes_per_token() const { return kv_bytes_per_token_; }

  double achieved_flops() const { return achieved_flops_; }
  double achieved_hbm_bandwidth() const { return achieved_hbm_bandwidth_; }

 private:
  CostModel() = default;
  double attention_flops_per_pair() const;

  ModelCard model_;
  double achieved_flops_ = 0;
  double achieved_hbm_bandwidth_ = 0;
  double kv_bytes_per_token_ = 0;
  std::optional<double> fixed_rate_;
};

}  // namespace kvtier
