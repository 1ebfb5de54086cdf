// A model card: the few numbers of a model's published configuration that KV and cost arithmetic need.
//
// Cards live in models/*.yaml. Attention is GQA/MHA (K and V of kv_heads × head_dim per layer) or
// MLA (one latent of kv_lora_rank + qk_rope_head_dim elements per layer, no separate V).
#pragma once

#include <cstdint>
#include <string>

#include "sim/core/config.h"

namespace kvtier {

enum class AttentionKind { kGqa, kMla };

// The most KV one token may take, in any layout: 1 GiB. The largest published models take a few MiB per
// token in bf16; the bound keeps bytes per block and per capacity far from int64_t's limit, and a card
// beyond it (a typo in kv_heads or head_dim) is a ConfigError.
inline constexpr int64_t kMaxKvBytesPerToken = int64_t{1} << 30;

struct ModelCard {
  std::string name;
  std::string source;  // where the numbers come from
  int layers = 0;
  int hidden_size = 0;
  int query_heads = 0;
  AttentionKind attention = AttentionKind::kGqa;
  // GQA/MHA
  int kv_heads = 0;
  int head_dim = 0;
  // MLA
  int kv_lora_rank = 0;
  int qk_rope_head_dim = 0;
  int qk_nope_head_dim = 0;
  int v_head_dim = 0;

  double total_params = 0;   // all weights, experts included
  double active_params = 0;  // weights touched per token (equal to total for dense models)
  double weight_bytes_per_param = 2;
  std::string weight_dtype = "bf16";

  // Elements cached per token per layer: 2 × kv_heads × head_dim (GQA) or the MLA latent width. Exact
  // for any non-negative int fields (at most 2 × (2^31 - 1)^2 < 2^63).
  int64_t kv_elements_per_layer() const;
  // Query-key and value widths per head, for the attention FLOP term.
  int qk_dim() const {
    return attention == AttentionKind::kMla ? qk_nope_head_dim + qk_rope_head_dim : head_dim;
  }
  int v_dim() const { return attention == AttentionKind::kMla ? v_head_dim : head_dim; }
  double weight_bytes() const { return total_params * weight_bytes_per_param; }
};

ModelCard load_model_card(const std::string& path);
// Throws ConfigError for a card whose bf16 KV exceeds kMaxKvBytesPerToken, located at its attention key.
ModelCard parse_model_card(const ConfigNode& root);

}  // namespace kvtier
