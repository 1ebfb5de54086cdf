#include "sim/core/cost_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "sim/core/config.h"

namespace kvtier {
namespace {

bool positive(double v) {
  return std::isfinite(v) && v > 0;
}
bool non_negative(double v) {
  return std::isfinite(v) && v >= 0;
}

void require_attention_costs(const AttentionCosts& a) {
  auto kernel_ok = [](const AttentionKernelCost& k) {
    return k.key_tile >= 1 && k.slots >= 1 && non_negative(k.launch_s) && non_negative(k.block_s) &&
           non_negative(k.key_tile_s) && non_negative(k.row_group_tile_s) && non_negative(k.empty_block_s);
  };
  if (!(a.query_rows >= 1 && a.multiprocessors >= 1 && a.max_splits >= 1 && a.min_split_keys >= 1 &&
        kernel_ok(a.unsplit) && kernel_ok(a.split))) {
    throw std::invalid_argument(
        "attention costs: tiles, slots, multiprocessors and split bounds must be 1 or more, times 0 or more");
  }
}

// With block-priced attention the four attention terms are unused, and may be 0.
void require_step_costs(const StepCosts& c) {
  if (c.attention) {
    if (!(non_negative(c.step_overhead_s) && positive(c.linear_mfu)))
      throw std::invalid_argument(
          "step costs: the linear rate must be positive and finite, the overhead 0 or more");
    require_attention_costs(*c.attention);
    return;
  }
  if (!(non_negative(c.step_overhead_s) && positive(c.linear_mfu) && positive(c.attention_mfu) &&
        non_negative(c.attention_half_rate_keys) && non_negative(c.attention_half_rate_queries) &&
        positive(c.attention_bandwidth_efficiency))) {
    throw std::invalid_argument(
        "step costs: rates must be positive and finite, the overhead and half-rate points 0 or more");
  }
}

// The kernel whose blocks the costs describe is GQA's (one KV head per group of query heads).
void require_gqa(const ModelCard& model) {
  if (model.attention != AttentionKind::kGqa || model.kv_heads < 1 ||
      model.query_heads % model.kv_heads != 0) {
    throw ConfigError(
        model.name +
        ": attention priced from the kernel's blocks needs a GQA card (query heads a multiple of "
        "KV heads); this calibration's serving.attention does not apply to it");
  }
}

}  // namespace

int64_t StepWork::tokens() const {
  int64_t tokens = decodes;
  for (const Chunk& chunk : prefills) tokens += chunk.new_tokens;
  return tokens;
}

CostModel::CostModel(const ModelCard& model, const HardwareConfig& hardware, double kv_bytes_per_token,
                     std::optional<StepCosts> step_costs)
    : model_(model), kv_bytes_per_token_(kv_bytes_per_token), step_costs_(step_costs) {
  const GpuSpec& gpu = hardware.gpu;
  achieved_flops_ = gpu.count * hardware.peak_flops(model.weight_dtype) * gpu.prefill_mfu;
  achieved_hbm_bandwidth_ = gpu.count * gpu.hbm_bandwidth * gpu.memory_bandwidth_efficiency;
  peak_flops_ = gpu.count * hardware.peak_flops(model.weight_dtype);
  hbm_bandwidth_ = gpu.count * gpu.hbm_bandwidth;
  if (step_costs_) require_step_costs(*step_costs_);
  if (step_costs_ && step_costs_->attention) {
    require_gqa(model);
    // The instance's GPUs split the KV heads between them (tensor parallel), at least one each.
    attention_kv_heads_ = static_cast<int>((model.kv_heads + gpu.count - 1) / gpu.count);
  }
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

double CostModel::attention_flops(int64_t cached_tokens, int64_t new_tokens) const {
  double n = static_cast<double>(new_tokens);
  double pairs = n * static_cast<double>(cached_tokens) + n * (n + 1) / 2;  // causal: token i sees cached + i
  return attention_flops_per_pair() * pairs;
}

double CostModel::prefill_flops(int64_t cached_tokens, int64_t new_tokens) const {
  return 2.0 * model_.active_params * static_cast<double>(new_tokens) +
         attention_flops(cached_tokens, new_tokens);
}

double CostModel::decode_flops(int64_t batch, int64_t context_tokens) const {
  return 2.0 * model_.active_params * static_cast<double>(batch) +
         attention_flops_per_pair() * static_cast<double>(context_tokens);
}

double CostModel::weight_bytes_touched(int64_t tokens) const {
  return std::min(model_.total_params, model_.active_params * static_cast<double>(tokens)) *
         model_.weight_bytes_per_param;
}

double CostModel::step_seconds(double flops, double kv_bytes, int64_t tokens) const {
  if (tokens <= 0) return 0;
  if (fixed_rate_) return static_cast<double>(tokens) / *fixed_rate_;
  return std::max(flops / achieved_flops_,
                  (weight_bytes_touched(tokens) + kv_bytes) / achieved_hbm_bandwidth_);
}

StepTerms CostModel::step_terms(const StepWork& work) const {
  const int64_t tokens = work.tokens();
  StepTerms terms{.linear_flops = 2.0 * model_.active_params * static_cast<double>(tokens),
                  .weight_bytes = weight_bytes_touched(tokens),
                  .decode_kv_bytes = kv_bytes_per_token_ * static_cast<double>(work.decode_context)};
  for (const StepWork::Chunk& chunk : work.prefills) {
    if (chunk.new_tokens <= 0) continue;
    const double flops = attention_flops(chunk.cached_tokens, chunk.new_tokens);
    terms.attention_flops += flops;
    terms.attention_flops_per_key += flops / static_cast<double>(chunk.cached_tokens + chunk.new_tokens);
    terms.attention_flops_per_query += flops / static_cast<double>(chunk.new_tokens);
  }
  return terms;
}

double CostModel::serving_step_seconds(const StepWork& work) const {
  const StepCosts& c = *step_costs_;
  const StepTerms t = step_terms(work);
  const double linear =
      std::max(t.linear_flops / (peak_flops_ * c.linear_mfu), t.weight_bytes / achieved_hbm_bandwidth_);
  if (c.attention) return c.step_overhead_s + linear + block_attention_seconds(work);
  const double attention = formula_prefill_attention_seconds(t);
  const double decode_attention = t.decode_kv_bytes / (hbm_bandwidth_ * c.attention_bandwidth_efficiency);
  return c.step_overhead_s + linear + attention + decode_attention;
}

bool CostModel::compute_bound(const StepWork& work) const {
  if (fixed_rate_) return false;
  const StepTerms t = step_terms(work);
  const double linear_rate = step_costs_ ? peak_flops_ * step_costs_->linear_mfu : achieved_flops_;
  return t.linear_flops / linear_rate > t.weight_bytes / achieved_hbm_bandwidth_;
}

double CostModel::block_attention_seconds(const StepWork& work) const {
  if (work.decode_contexts.size() != static_cast<size_t>(work.decodes)) {
    throw std::invalid_argument(
        "step work: attention priced from the kernel's blocks needs each decode's "
        "context (StepWork::add_decode)");
  }
  std::vector<AttentionSequence> step;
  step.reserve(work.prefills.size() + work.decode_contexts.size());
  for (const int64_t context : work.decode_contexts) step.push_back({context, 1});
  for (const StepWork::Chunk& chunk : work.prefills) {
    if (chunk.new_tokens > 0) step.push_back({chunk.cached_tokens, chunk.new_tokens});
  }
  const int gqa_ratio = model_.query_heads / model_.kv_heads;
  return model_.layers *
         attention_launch_seconds(*step_costs_->attention, attention_kv_heads_, gqa_ratio, step);
}

double CostModel::prefill_attention_seconds(const StepWork& work) const {
  if (!step_costs_) return 0;
  StepWork prefills;
  prefills.prefills = work.prefills;
  if (step_costs_->attention) return block_attention_seconds(prefills);
  return formula_prefill_attention_seconds(step_terms(prefills));
}

double CostModel::formula_prefill_attention_seconds(const StepTerms& t) const {
  const StepCosts& c = *step_costs_;
  return (t.attention_flops + t.attention_flops_per_key * c.attention_half_rate_keys +
          t.attention_flops_per_query * c.attention_half_rate_queries) /
         (peak_flops_ * c.attention_mfu);
}

double CostModel::step_seconds(const StepWork& work) const {
  const int64_t tokens = work.tokens();
  if (tokens <= 0) return 0;
  if (step_costs_) return serving_step_seconds(work);
  double flops = 0, kv_bytes = 0;
  for (const StepWork::Chunk& chunk : work.prefills) {
    flops += prefill_flops(chunk.cached_tokens, chunk.new_tokens);
    kv_bytes += kv_bytes_per_token_ * static_cast<double>(chunk.cached_tokens + chunk.new_tokens);
  }
  flops += decode_flops(work.decodes, work.decode_context);
  kv_bytes += kv_bytes_per_token_ * static_cast<double>(work.decode_context);
  return step_seconds(flops, kv_bytes, tokens);
}

double CostModel::prefill_seconds(int64_t cached_tokens, int64_t new_tokens) const {
  if (step_costs_) {
    StepWork work;
    work.add_prefill(cached_tokens, new_tokens);
    return step_seconds(work);
  }
  double kv_bytes =
      kv_bytes_per_token_ * (static_cast<double>(cached_tokens) + static_cast<double>(new_tokens));
  return step_seconds(prefill_flops(cached_tokens, new_tokens), kv_bytes, new_tokens);
}

double CostModel::prefill_tokens_per_s(int64_t tokens) const {
  return static_cast<double>(tokens) / prefill_seconds(0, tokens);
}

double CostModel::decode_step_seconds(int64_t batch, int64_t context_tokens) const {
  if (step_costs_) {
    // Each decode's context is unknown: spread evenly, the first ones a token longer.
    StepWork work;
    for (int64_t i = 0; i < batch; ++i)
      work.add_decode(context_tokens / batch + (i < context_tokens % batch ? 1 : 0));
    return step_seconds(work);
  }
  return step_seconds(decode_flops(batch, context_tokens),
                      kv_bytes_per_token_ * static_cast<double>(context_tokens), batch);
}

}  // namespace kvtier
