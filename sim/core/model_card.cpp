#include "sim/core/model_card.h"

#include "sim/core/checked_math.h"

namespace kvtier {
namespace {

double dtype_bytes(const ConfigNode& node, const std::string& dtype) {
  if (dtype == "bf16" || dtype == "fp16") return 2;
  if (dtype == "fp8") return 1;
  if (dtype == "fp32") return 4;
  if (dtype == "int4" || dtype == "fp4") return 0.5;
  node.fail("expected one of bf16, fp16, fp8, fp32, int4, fp4; got '" + dtype + "'");
}

// Layer, head and dimension counts: 1 to 2^24, far above any published model and far below int's limit.
constexpr int64_t kMaxCardInteger = int64_t{1} << 24;

int positive_int(const ConfigNode& root, std::string_view key) {
  ConfigNode node = root.child(key);
  int64_t value = node.as_integer();
  if (value <= 0) node.fail("expected a positive integer");
  if (value > kMaxCardInteger) {
    node.fail("expected a positive integer up to " + std::to_string(kMaxCardInteger) + ", got " +
              std::to_string(value));
  }
  return static_cast<int>(value);
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
    attention.allow_keys({"kind", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"});
    card.attention = AttentionKind::kMla;
    card.kv_lora_rank = positive_int(attention, "kv_lora_rank");
    card.qk_rope_head_dim = positive_int(attention, "qk_rope_head_dim");
    card.qk_nope_head_dim = positive_int(attention, "qk_nope_head_dim");
    card.v_head_dim = positive_int(attention, "v_head_dim");
  } else {
    attention.child("kind").fail("expected gqa, mha or mla; got '" + kind + "'");
  }
}

// The card is checked in bf16 (2 bytes an element); a layout that takes more per element (int4 with tiny
// groups and fp32 scales) is checked against the same limit by build_layout.
void check_kv_size(const ConfigNode& attention, const ModelCard& card) {
  std::optional<int64_t> per_layer = checked_mul(card.kv_elements_per_layer(), 2);
  std::optional<int64_t> per_token = per_layer ? checked_mul(*per_layer, card.layers) : std::nullopt;
  if (per_token && *per_token <= kMaxKvBytesPerToken) return;
  attention.fail("the KV of one token would take " +
                 (per_token ? std::to_string(*per_token) + " B" : std::string("more than 2^63 B")) +
                 " in bf16 over " + std::to_string(card.layers) + " layers; the limit is " +
                 std::to_string(kMaxKvBytesPerToken) + " B (1 GiB) per token");
}

}  // namespace

int64_t ModelCard::kv_elements_per_layer() const {
  if (attention == AttentionKind::kMla) return int64_t{kv_lora_rank} + qk_rope_head_dim;
  return 2 * int64_t{kv_heads} * head_dim;
}

ModelCard parse_model_card(const ConfigNode& root) {
  root.allow_keys({"name", "source", "layers", "hidden_size", "query_heads", "attention", "total_params",
                   "active_params", "weight_dtype"});
  ModelCard card;
  card.name = root.string("name");
  card.source = root.string("source", "");
  card.layers = positive_int(root, "layers");
  card.hidden_size = positive_int(root, "hidden_size");
  card.query_heads = positive_int(root, "query_heads");
  parse_attention(root, card);
  check_kv_size(root.child("attention"), card);
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
  return parse_model_card(ConfigNode::load_file(path));
}

}  // namespace kvtier
