// A model card from a Hugging Face config.json, so that a model kvtier has no card for is one file away.
//
// Wherever a model is accepted (`--model`, a scenario's `model:`), a path ending in .json is read here
// (through load_config). The attention layout comes from the fields present: kv_lora_rank and the other
// MLA fields (DeepSeek-V2/V3), else num_key_value_heads with an explicit head_dim or hidden / heads (GQA).
// The MLP layout comes from model_type (or architectures[0] when model_type is absent): the families below
// share a gated MLP (gate, up, down) and RMSNorm, and their expert fields are read under each family's
// names (Qwen3-MoE num_experts, DeepSeek n_routed_experts, Mixtral/MiniMax num_local_experts). Total and
// active parameters are counted from the shape, since config.json does not state them; a config kvtier
// cannot map is a ConfigError naming the file and the field.
#pragma once

#include <string>

#include "sim/core/model_card.h"

namespace kvtier {

// The weights a shape implies. Counted: token embeddings, the LM head unless tied, per layer the attention
// projections (with their biases where the config has them, and MLA's two low-rank norms), the dense MLP
// or the router, routed and shared experts, two RMSNorms, and the final norm. Active counts only the
// routed experts a token goes through (top-k); everything else is active.
struct ParameterCounts {
  double total = 0;
  double active = 0;
};

struct ExtraWeights {
  bool tied_embeddings = false;  // the LM head reuses the embedding matrix
  bool qkv_bias = false;         // Q, K and V projections have biases (Qwen2; attention_bias)
  bool output_bias = false;      // the output projection has a bias (attention_bias)
};

// REQUIRES: a card that parse_model_card accepts and that gives intermediate_size and vocab_size.
ParameterCounts count_parameters(const ModelCard& card, const ExtraWeights& extra = {});

// Parses `text`, the contents of the config.json at `file` (which names errors: "file:line:column: invalid
// JSON: ..." for a syntax error, "file: field: what was expected" for a value). The card's name is the
// file's stem without a trailing "-config" ("config.json" itself: its folder's name).
ModelCard parse_hf_config(const std::string& text, const std::string& file);
ModelCard load_hf_config(const std::string& path);

}  // namespace kvtier
