#include "sim/core/config.h"
#include "hw/tools/gemm_probe.h"

namespace kvtier::hw {

// The MLP of a dense card is intermediate_size wide; an MoE card's layers run each token through its
// routed top-k and shared experts, timed as one MLP of their summed width (the same FLOPs per token).
std::vector<GemmShape> prefill_gemm_shapes(const ModelCard& model, int64_t tokens) {
  if (model.attention != AttentionKind::kGqa) {
    throw ConfigError(model.name + ": prefill GEMM shapes are derived for GQA/MHA model cards only");
  }
  const int64_t hidden = model.hidden_size;
  const int64_t q_width = int64_t{model.query_heads} * model.head_dim;
  const int64_t qkv_width = q_width + 2 * int64_t{model.kv_heads} * model.head_dim;
  const int64_t mlp_width = model.moe ? int64_t{model.moe->experts_per_token + model.moe->shared_experts} *
                                            model.moe->expert_intermediate_size
                                      : model.intermediate_size;
  if (mlp_width <= 0) {
    throw ConfigError(model.name + ": the model card gives no intermediate_size, which the MLP GEMMs need");
  }
  return {{"qkv", qkv_width, tokens, hidden},
          {"o", hidden, tokens, q_width},
          {"gate_up", 2 * mlp_width, tokens, hidden},
          {"down", hidden, tokens, mlp_width}};
}

}  // namespace kvtier::hw
