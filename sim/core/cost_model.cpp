#include "sim/core/cost_model.h"

#include <algorithm>
#include <cmath>

#include "sim/core/config.h"

namespace kvtier {

CostModel::CostModel(const ModelCard& model, const HardwareConfig& hardware, double kv_bytes_per_token)
    : model_(model), kv_bytes_per_token_(kv_bytes_per_token) {
  const GpuSpec& gpu = hardware.gpu;
  achieved_flops_ = gpu.count * hardware.peak_flops(model.weight_dtype) * gpu.prefill_mfu;
  achieved_hbm_bandwidth_ = gpu.count * gpu.hbm_bandwidth * gpu.memory_bandwidth_efficiency;
}

CostModel CostModel::fixed_prefill_rate(const ModelCard& model, double tokens_per_s,
                                        double kv_bytes_per_token) {
  if (!(std::isfinite(tokens_per_s) && tokens_per_s > 0)) {
    throw ConfigError("prefill rate: expected a positive, finite number of tokens per second, got " +
                      std::to_string(tokens_per_s));
  }
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

double CostModel::decode_flops(int64_t batch, int64_t context_tokens) const {
  return 2.0 * model_.active_params * static_cast<double>(batch) +
         attention_flops_per_pair() * static_cast<double>(context_tokens);
}

double CostModel::step_seconds(double flops, double kv_bytes, int64_t tokens) const {
  if (tokens <= 0) return 0;
  if (fixed_rate_) return static_cast<double>(tokens) / *fixed_rate_;
  double weight_bytes = std::min(model_.total_params, model_.active_params * static_cast<double>(tokens)) *
                        model_.weight_bytes_per_param;
  return std::max(flops / achieved_flops_, (weight_bytes + kv_bytes) / achieved_hbm_bandwidth_);
}

double CostModel::prefill_seconds(int64_t cached_tokens, int64_t new_tokens) const {
  double kv_bytes =
      kv_bytes_per_token_ * (static_cast<double>(cached_tokens) + static_cast<double>(new_tokens));
  return step_seconds(prefill_flops(cached_tokens, new_tokens), kv_bytes, new_tokens);
}

double CostModel::prefill_tokens_per_s(int64_t tokens) const {
  return static_cast<double>(tokens) / prefill_seconds(0, tokens);
}

double CostModel::decode_step_seconds(int64_t batch, int64_t context_tokens) const {
  return step_seconds(decode_flops(batch, context_tokens),
                      kv_bytes_per_token_ * static_cast<double>(context_tokens), batch);
}

}  // namespace kvtier
