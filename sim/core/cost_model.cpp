#include "cost_model.h"

#include <algorithm>

namespace kvtier {

CostModel::CostModel(const ModelCard& model, const HardwareConfig& hardware, double kv_bytes_per_token)
    : model_(model), kv_bytes_per_token_(kv_bytes_per_token) {
  const GpuSpec& gpu = hardware.gpu;
  achieved_flops_ = gpu.count * hardware.peak_flops(model.weight_dtype) * gpu.prefill_mfu;
  achieved_hbm_bandwidth_ = gpu.count * gpu.hbm_bandwidth * gpu.memory_bandwidth_efficiency;
}

CostModel CostModel::fixed_prefill_rate(const ModelCard& model, double tokens_per_s, double kv_bytes_per_token) {
  CostModel cost;
  cost.model_ = model;
  cost.kv_bytes_per_token_ = kv_bytes_per_token;
  cost.fixed_rate_ = tokens_per_s;
  return cost;
}

double CostModel::attention_flops_per_pair() const {
  // QK^T and PV: one multiply-add (2 FLOPs) per element of each, per query head, per layer.
  return 2.0 * model_.query_heads * (model_.qk_dim() + model_.v_dim()) * model_.layers;
}

double CostModel::prefill_flops(int64_t cached_tokens, int64_t new_tokens) const {
  double n = static_cast<double>(new_tokens);
  double pairs = n * static_cast<double>(cached_tokens) + n * (n + 1) / 2;  // causal: token i sees cached + i
  return 2.0 * model_.active_params * n + attention_flops_per_pair() * pairs;
}

double CostModel::prefill_seconds(int64_t cached_tokens, int64_t new_tokens) const {
  if (new_tokens <= 0) return 0;
  if (fixed_rate_) return static_cast<double>(new_tokens) / *fixed_rate_;
  double compute = prefill_flops(cached_tokens, new_tokens) / achieved_flops_;
  double memory = (model_.weight_bytes() + kv_bytes_per_token_ * static_cast<double>(cached_tokens + new_tokens)) /
                  achieved_hbm_bandwidth_;
  return std::max(compute, memory);
}

double CostModel::prefill_tokens_per_s(int64_t tokens) const {
  return static_cast<double>(tokens) / prefill_seconds(0, tokens);
}

double CostModel::decode_step_seconds(int64_t batch, int64_t context_tokens) const {
  if (batch <= 0) return 0;
  double b = static_cast<double>(batch);
  if (fixed_rate_) return b / *fixed_rate_;
  // A MoE step touches at most every expert, at least the active ones for each sequence.
  double weight_bytes =
      std::min(model_.total_params, model_.active_params * b) * model_.weight_bytes_per_param;
  double kv_bytes = kv_bytes_per_token_ * static_cast<double>(context_tokens);
  double memory = (weight_bytes + kv_bytes) / achieved_hbm_bandwidth_;
  double flops = 2.0 * model_.active_params * b + attention_flops_per_pair() * static_cast<double>(context_tokens);
  return std::max(memory, flops / achieved_flops_);
}

}  // namespace kvtier
