// Prefill compute rate: the linear layers of a model card, timed as bf16 GEMMs through the vendor BLAS
// (cuBLAS on CUDA, hipBLAS on ROCm).
//
// Prefill time is dominated by the projections every token goes through. For `tokens` rows, one layer
// runs four GEMMs whose shapes come from the card: the fused QKV projection (hidden -> (q + 2 kv) heads
// x head_dim), the output projection, the fused gate+up projection and the down projection. The MLP
// width is the card's `intermediate_size`; for an MoE card, (experts_per_token + shared_experts) x
// expert_intermediate_size, the same FLOPs per token as one MLP that wide. Embeddings and the LM head are
// not timed.
// Attention itself (softmax(QK^T)V) is not timed: prefill_mfu from these GEMMs is the linear layers'
// efficiency, an upper bound for long prompts where attention's share grows.
// Inputs are random bf16 (never zeros: zeros run faster), accumulation in fp32.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/model_card.h"

namespace kvtier::hw {

struct GemmShape {
  std::string name;  // "qkv", "o", "gate_up", "down"
  int64_t m = 0;     // output features
  int64_t n = 0;     // tokens
  int64_t k = 0;     // input features
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

// The four per-layer GEMMs of a GQA model card for `tokens` rows. Throws ConfigError for MLA cards.
std::vector<GemmShape> prefill_gemm_shapes(const ModelCard& model, int64_t tokens);

struct GemmSample {
  std::string model;
  GemmShape shape;
  double seconds = 0;
  double flops_per_s() const { return shape.flops() / seconds; }
};

// True when this build has a vendor BLAS to time GEMMs with.
bool gemm_probe_available();
// Times each shape (median of 5 runs of 10 GEMMs). Throws std::runtime_error when no BLAS is built in.
std::vector<GemmSample> measure_gemms(const std::string& model_name, const std::vector<GemmShape>& shapes);

}  // namespace kvtier::hw
