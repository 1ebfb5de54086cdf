#include "sim/core/model_card.h"

#include <yaml-cpp/yaml.h>

#include <limits>

#include "sim/core/checked_math.h"
#include "sim/core/config_files.h"

namespace kvtier {
namespace {

double dtype_bytes(const ConfigNode& node, const std::string& dtype) {
  if (dtype == "bf16" || dtype == "fp16") return 2;
  if (dtype == "fp8") return 1;
  if (dtype == "fp32") return 4;
  if (dtype == "int4" || dtype == "fp4") return 0.5;
  node.fail("expected one of bf16, fp16, fp8, fp32, int4, fp4; got '" + dtype + "'");
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
  std::string kind = attention.string("kind");
  if (kind == "gqa" || kind == "mha") {
    attention.allow_keys({"kind", "kv_heads", "head_dim"});
    card.attention = AttentionKind::kGqa;
    card.kv_heads = positive_int(attention, "kv_heads");
    card.head_dim = positive_int(attention, "head_dim");
  } else if (kind == "mla") {
    attention.allow_keys(
        {"kind", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "q_lora_rank"});
    card.attention = AttentionKind::kMla;
    card.kv_lora_rank = positive_int(attention, "kv_lora_rank");
    card.qk_rope_head_dim = positive_int(attention, "qk_rope_head_dim");
    card.qk_nope_head_dim = positive_int(attention, "qk_nope_head_dim");
    card.v_head_dim = positive_int(attention, "v_head_dim");
    card.q_lora_rank = optional_positive_int(attention, "q_lora_rank");
  } else {
    attention.child("kind").fail("expected gqa, mha or mla; got '" + kind + "'");
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
         (per_token ? std::to_string(*per_token) + " B" : std::string("more than 2^63 B")) + " in bf16 over " +
         std::to_string(card.layers) + " layers; the limit is " + std::to_string(kMaxKvBytesPerToken) +
         " B (1 GiB) per token";
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
  card.weight_dtype = root.string("weight_dtype", "bf16");
  card.weight_bytes_per_param =
      dtype_bytes(root.has("weight_dtype") ? root.child("weight_dtype") : root, card.weight_dtype);
  return card;
}

ModelCard load_model_card(const std::string& path) {
  return parse_model_card(load_config(path, "models"));
}

std::string model_card_yaml(const ModelCard& card) {
  YAML::Emitter out;
  out.SetDoublePrecision(std::numeric_limits<double>::max_digits10);
  out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << card.name;
  if (!card.source.empty()) out << YAML::Key << "source" << YAML::Value << card.source;
  out << YAML::Key << "layers" << YAML::Value << card.layers << YAML::Key << "hidden_size" << YAML::Value
      << card.hidden_size << YAML::Key << "query_heads" << YAML::Value << card.query_heads;
  out << YAML::Key << "attention" << YAML::Value << YAML::Flow << YAML::BeginMap;
  if (card.attention == AttentionKind::kGqa) {
    out << YAML::Key << "kind" << YAML::Value << "gqa" << YAML::Key << "kv_heads" << YAML::Value << card.kv_heads
        << YAML::Key << "head_dim" << YAML::Value << card.head_dim;
  } else {
    out << YAML::Key << "kind" << YAML::Value << "mla" << YAML::Key << "kv_lora_rank" << YAML::Value
        << card.kv_lora_rank << YAML::Key << "qk_rope_head_dim" << YAML::Value << card.qk_rope_head_dim
        << YAML::Key << "qk_nope_head_dim" << YAML::Value << card.qk_nope_head_dim << YAML::Key << "v_head_dim"
        << YAML::Value << card.v_head_dim;
    if (card.q_lora_rank > 0) out << YAML::Key << "q_lora_rank" << YAML::Value << card.q_lora_rank;
  }
  out << YAML::EndMap;
  if (card.intermediate_size > 0) out << YAML::Key << "intermediate_size" << YAML::Value << card.intermediate_size;
  if (card.vocab_size > 0) out << YAML::Key << "vocab_size" << YAML::Value << card.vocab_size;
  if (card.moe) {
    out << YAML::Key << "moe" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "routed_experts"
        << YAML::Value << card.moe->routed_experts << YAML::Key << "experts_per_token" << YAML::Value
        << card.moe->experts_per_token << YAML::Key << "shared_experts" << YAML::Value
        << card.moe->shared_experts << YAML::Key << "expert_intermediate_size" << YAML::Value
        << card.moe->expert_intermediate_size << YAML::Key << "first_dense_layers" << YAML::Value
        << card.moe->first_dense_layers << YAML::EndMap;
  }
  out << YAML::Key << "total_params" << YAML::Value << card.total_params << YAML::Key << "active_params"
      << YAML::Value << card.active_params << YAML::Key << "weight_dtype" << YAML::Value << card.weight_dtype
      << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace kvtier
