// A model card: the few numbers of a model's published configuration that KV and cost arithmetic need.
//
// Cards live in models/*.yaml. Attention is GQA/MHA (K and V of kv_heads × head_dim per layer) or
// MLA (one latent of kv_lora_rank + qk_rope_head_dim elements per layer, no separate V).
#pragma once

#include <string>

#include "config.h"

namespace kvtier {

enum class AttentionKind { kGqa, kMla };

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

  // Elements cached per token per layer: 2 × kv_heads × head_dim (GQA) or the MLA latent width.
  int kv_elements_per_layer() const;
  // Query-key and value widths per head, for the attention FLOP term.
  int qk_dim() const {
    return attention == AttentionKind::kMla ? qk_nope_head_dim + qk_rope_head_dim : head_dim;
  }
  int v_dim() const { return attention == AttentionKind::kMla ? v_head_dim : head_dim; }
  double weight_bytes() const { return total_params * weight_bytes_per_param; }
};

ModelCard load_model_card(const std::string& path);
ModelCard parse_model_card(const ConfigNode& root);

}  // namespace kvtier
