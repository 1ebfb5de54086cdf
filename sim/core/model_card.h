// A model card: the numbers of a model's published configuration that KV, cost and compute arithmetic need.
//
// Cards live in models/*.yaml (or are read from a Hugging Face config.json, sim/core/hf_config.h).
// Attention is GQA/MHA (K and V of kv_heads × head_dim per layer) or MLA (one latent of kv_lora_rank +
// qk_rope_head_dim elements per layer, no separate V). KV arithmetic and the cost model read only the
// attention shape and the parameter counts; the compute shape (MLP width, vocabulary, experts) is there so
// that the hardware mode runs a model's exact matrices instead of guessing them. It is optional in a card
// (0 or no `moe` when not given), and whatever needs it says so when it is missing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "sim/core/config.h"

namespace kvtier {

enum class AttentionKind { kGqa, kMla };

// The most KV one token may take, in any layout: 1 GiB. The largest published models take a few MiB per
// token in bf16; the bound keeps bytes per block and per capacity far from int64_t's limit, and a card
// beyond it (a typo in kv_heads or head_dim) is a ConfigError.
inline constexpr int64_t kMaxKvBytesPerToken = int64_t{1} << 30;

// Layer, head, dimension, expert and vocabulary counts: 1 to 2^24, far above any published model and far
// below int's limit, so that products of two of them fit int64_t.
inline constexpr int64_t kMaxCardInteger = int64_t{1} << 24;

// The mixture-of-experts layers of a card: the first `first_dense_layers` layers have a dense MLP of the
// card's intermediate_size, every later layer routes each token to `experts_per_token` of
// `routed_experts` experts and through all `shared_experts`, each a gated MLP of expert_intermediate_size.
struct MoeShape {
  int routed_experts = 0;
  int experts_per_token = 0;  // top-k
  int shared_experts = 0;
  int expert_intermediate_size = 0;
  int first_dense_layers = 0;
  bool operator==(const MoeShape&) const = default;
};

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
  int q_lora_rank = 0;  // rank of the query down-projection; 0 when queries are projected directly

  // Compute shape; 0 (or no moe) when the card does not give it.
  int intermediate_size = 0;  // MLP width of a dense layer (gate and up each project hidden -> it)
  int vocab_size = 0;
  std::optional<MoeShape> moe;

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
  bool operator==(const ModelCard&) const = default;
};

// Reads a card by built-in name or path (load_config): YAML, or a Hugging Face config.json for a .json path.
ModelCard load_model_card(const std::string& path);
// Throws ConfigError for a card whose bf16 KV exceeds kMaxKvBytesPerToken, located at its attention key.
ModelCard parse_model_card(const ConfigNode& root);

// What is wrong with a card whose bf16 KV of one token exceeds kMaxKvBytesPerToken, or "" when it fits.
std::string kv_size_problem(const ModelCard& card);

// The card as a YAML document that parse_model_card reads back to an equal card.
std::string model_card_yaml(const ModelCard& card);

}  // namespace kvtier
