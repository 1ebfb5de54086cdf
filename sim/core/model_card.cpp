#include "sim/core/model_card.h"

#include <yaml-cpp/yaml.h>

#include <limits>

#include "sim/core/checked_math.h"
#include "sim/core/config_files.h"

namespace kvtier {
namespace {

const std::vector<std::string> kWeightDtypes = {"bf16", "fp16", "fp8", "fp32", "int4", "fp4"};

// REQUIRES: one of kWeightDtypes.
double dtype_bytes(const std::string& dtype) {
  if (dtype == "bf16" || dtype == "fp16") return 2;
  if (dtype == "fp8") return 1;
  if (dtype == "fp32") return 4;
  return 0.5;  // int4, fp4
}

// REQUIRES: node is a non-negative integer.
int within_card_limit(const ConfigNode& node) {
  int64_t value = node.as_integer();
  if (value > kMaxCardInteger) {
    node.fail("expected a positive integer up to " + std::to_string(kMaxCardInteger) + ", got " +
              std::to_string(value));
  }
  return static_cast<int>(value);
}

int positive_int(const ConfigNode& root, std::string_view key) {
  ConfigNode node = root.child(key);
  if (node.as_integer() <= 0) node.fail("expected a positive integer");
  return within_card_limit(node);
}

int optional_positive_int(const ConfigNode& root, std::string_view key) {
  return root.has(key) ? positive_int(root, key) : 0;
}

int non_negative_int(const ConfigNode& root, std::string_view key, int fallback) {
  if (!root.has(key)) return fallback;
  ConfigNode node = root.child(key);
  if (node.as_integer() < 0) node.fail("expected a non-negative integer");
  return within_card_limit(node);
}

double positive_number(const ConfigNode& root, std::string_view key) {
  ConfigNode node = root.child(key);
  double value = node.as_number();
  if (value <= 0) node.fail("expected a positive number");
  return value;
}

void parse_attention(const ConfigNode& root, ModelCard& card) {
  ConfigNode attention = root.child("attention");
  std::string kind = attention.choice("kind", {"gqa", "mha", "mla"});
  if (kind == "gqa" || kind == "mha") {
    attention.allow_keys({"kind", "kv_heads", "head_dim"});
    card.attention = AttentionKind::kGqa;
    card.kv_heads = positive_int(attention, "kv_heads");
    card.head_dim = positive_int(attention, "head_dim");
  } else {
    attention.allow_keys(
        {"kind", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "q_lora_rank"});
    card.attention = AttentionKind::kMla;
    card.kv_lora_rank = positive_int(attention, "kv_lora_rank");
    card.qk_rope_head_dim = positive_int(attention, "qk_rope_head_dim");
    card.qk_nope_head_dim = positive_int(attention, "qk_nope_head_dim");
    card.v_head_dim = positive_int(attention, "v_head_dim");
    card.q_lora_rank = optional_positive_int(attention, "q_lora_rank");
  }
}

MoeShape parse_moe(const ConfigNode& moe, const ModelCard& card) {
  moe.allow_keys({"routed_experts", "experts_per_token", "shared_experts", "expert_intermediate_size",
                  "first_dense_layers"});
  MoeShape shape{.routed_experts = positive_int(moe, "routed_experts"),
                 .experts_per_token = positive_int(moe, "experts_per_token"),
                 .shared_experts = non_negative_int(moe, "shared_experts", 0),
                 .expert_intermediate_size = positive_int(moe, "expert_intermediate_size"),
                 .first_dense_layers = non_negative_int(moe, "first_dense_layers", 0)};
  if (shape.experts_per_token > shape.routed_experts) {
    moe.child("experts_per_token")
        .fail("expected at most routed_experts (" + std::to_string(shape.routed_experts) + "), got " +
              std::to_string(shape.experts_per_token));
  }
  if (shape.first_dense_layers >= card.layers) {
    moe.child("first_dense_layers")
        .fail("expected fewer than the " + std::to_string(card.layers) + " layers, got " +
              std::to_string(shape.first_dense_layers));
  }
  if (shape.first_dense_layers > 0 && card.intermediate_size == 0) {
    moe.child("first_dense_layers").fail("the leading dense layers need the card's intermediate_size");
  }
  return shape;
}

}  // namespace

// The card is checked in bf16 (2 bytes an element); a layout that takes more per element (int4 with tiny
// groups and fp32 scales) is checked against the same limit by build_layout.
std::string kv_size_problem(const ModelCard& card) {
  std::optional<int64_t> per_layer = checked_mul(card.kv_elements_per_layer(), 2);
  std::optional<int64_t> per_token = per_layer ? checked_mul(*per_layer, card.layers) : std::nullopt;
  if (per_token && *per_token <= kMaxKvBytesPerToken) return "";
  return "the KV of one token would take " +
         (per_token ? std::to_string(*per_token) + " B" : std::string("more than 2^63 B")) +
         " in bf16 over " + std::to_string(card.layers) + " layers; the limit is " +
         std::to_string(kMaxKvBytesPerToken) + " B (1 GiB) per token";
}

int64_t ModelCard::kv_elements_per_layer() const {
  if (attention == AttentionKind::kMla) return int64_t{kv_lora_rank} + qk_rope_head_dim;
  return 2 * int64_t{kv_heads} * head_dim;
}

ModelCard parse_model_card(const ConfigNode& root) {
  root.allow_keys({"name", "source", "layers", "hidden_size", "query_heads", "attention", "intermediate_size",
                   "vocab_size", "moe", "total_params", "active_params", "weight_dtype"});
  ModelCard card;
  card.name = root.string("name");
  card.source = root.string("source", "");
  card.layers = positive_int(root, "layers");
  card.hidden_size = positive_int(root, "hidden_size");
  card.query_heads = positive_int(root, "query_heads");
  parse_attention(root, card);
  if (std::string problem = kv_size_problem(card); !problem.empty()) root.child("attention").fail(problem);
  card.intermediate_size = optional_positive_int(root, "intermediate_size");
  card.vocab_size = optional_positive_int(root, "vocab_size");
  if (root.has("moe")) card.moe = parse_moe(root.child("moe"), card);
  card.total_params = positive_number(root, "total_params");
  card.active_params = root.has("active_params") ? positive_number(root, "active_params") : card.total_params;
  if (card.active_params > card.total_params) {
    root.child("active_params").fail("active_params exceeds total_params");
  }
  card.weight_dtype = root.choice("weight_dtype", kWeightDtypes, "bf16");
  card.weight_bytes_per_param = dtype_bytes(card.weight_dtype);
  return card;
}

ModelCard load_model_card(const std::string& path) {
  return parse_model_card(load_config(path, "models"));
}

std::string model_card_yaml(const ModelCard& card) {
  YAML::Emitter out;
  out.SetDoublePrecision(std::numeric_limits<double>::max_digits10);
  auto put = [&out](const char* key, const auto& value) { out << YAML::Key << key << YAML::Value << value; };
  out << YAML::BeginMap;
  put("name", card.name);
  if (!card.source.empty()) put("source", card.source);
  put("layers", card.layers);
  put("hidden_size", card.hidden_size);
  put("query_heads", card.query_heads);
  out << YAML::Key << "attention" << YAML::Value << YAML::Flow << YAML::BeginMap;
  if (card.attention == AttentionKind::kGqa) {
    put("kind", "gqa");
    put("kv_heads", card.kv_heads);
    put("head_dim", card.head_dim);
  } else {
    put("kind", "mla");
    put("kv_lora_rank", card.kv_lora_rank);
    put("qk_rope_head_dim", card.qk_rope_head_dim);
    put("qk_nope_head_dim", card.qk_nope_head_dim);
    put("v_head_dim", card.v_head_dim);
    if (card.q_lora_rank > 0) put("q_lora_rank", card.q_lora_rank);
  }
  out << YAML::EndMap;
  if (card.intermediate_size > 0) put("intermediate_size", card.intermediate_size);
  if (card.vocab_size > 0) put("vocab_size", card.vocab_size);
  if (card.moe) {
    out << YAML::Key << "moe" << YAML::Value << YAML::Flow << YAML::BeginMap;
    put("routed_experts", card.moe->routed_experts);
    put("experts_per_token", card.moe->experts_per_token);
    put("shared_experts", card.moe->shared_experts);
    put("expert_intermediate_size", card.moe->expert_intermediate_size);
    put("first_dense_layers", card.moe->first_dense_layers);
    out << YAML::EndMap;
  }
  put("total_params", card.total_params);
  put("active_params", card.active_params);
  put("weight_dtype", card.weight_dtype);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace kvtier
