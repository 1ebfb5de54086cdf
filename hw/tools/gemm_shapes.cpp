#include <cmath>

#include "sim/core/config.h"
#include "hw/tools/gemm_probe.h"

namespace kvtier::hw {

std::vector<GemmShape> prefill_gemm_shapes(const ModelCard& model, int64_t tokens) {
  if (model.attention != AttentionKind::kGqa) {
    throw ConfigError(model.name + ": prefill GEMM shapes are derived for GQA/MHA model cards only");
  }
  const int64_t hidden = model.hidden_size;
  const int64_t q_width = int64_t{model.query_heads} * model.head_dim;
  const int64_t qkv_width = q_width + 2 * int64_t{model.kv_heads} * model.head_dim;
  const double attention_weights = static_cast<double>(hidden * qkv_width + q_width * hidden);
  const double per_layer = model.active_params / model.layers;
  // Checkpoints pad the MLP width to a multiple of 256 (14,336, 28,672); an odd width would also send
  // cuBLAS to slow kernels (measured on the H200: 144 TFLOP/s at a width of 29,765).
  const double exact_width = (per_layer - attention_weights) / (3.0 * static_cast<double>(hidden));
  const int64_t mlp_width = std::llround(exact_width / 256.0) * 256;
  if (mlp_width <= 0) {
    throw ConfigError(model.name + ": active_params leave no room for an MLP after the attention weights");
  }
  return {{"qkv", qkv_width, tokens, hidden},
          {"o", hidden, tokens, q_width},
          {"gate_up", 2 * mlp_width, tokens, hidden},
          {"down", hidden, tokens, mlp_width}};
}

}  // namespace kvtier::hw
