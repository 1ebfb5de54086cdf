#include "sim/core/hf_config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "sim/core/json_text.h"

namespace kvtier {
namespace {

using nlohmann::json;

constexpr size_t kMaxConfigBytes = size_t{16} << 20;

// The decoder families whose layers kvtier knows: RMSNorm before attention and MLP, gated MLPs (gate, up,
// down), experts under one of the names read in map_mlp.
struct Family {
  std::string_view model_type;
  std::string_view architecture;
  bool qkv_bias;  // Q, K and V projections always have biases
};
constexpr Family kFamilies[] = {{"llama", "LlamaForCausalLM", false},
                                {"mistral", "MistralForCausalLM", false},
                                {"qwen2", "Qwen2ForCausalLM", true},
                                {"qwen3", "Qwen3ForCausalLM", false},
                                {"mixtral", "MixtralForCausalLM", false},
                                {"qwen3_moe", "Qwen3MoeForCausalLM", false},
                                {"deepseek_v2", "DeepseekV2ForCausalLM", false},
                                {"deepseek_v3", "DeepseekV3ForCausalLM", false},
                                {"minimax_m2", "MiniMaxM2ForCausalLM", false},
                                {"minimax", "MiniMaxForCausalLM", false}};

// The document, with a key given twice in one object an error (nlohmann would keep the last silently).
json parse_json(const std::string& text, const std::string& file) {
  std::vector<std::set<std::string>> open_objects;
  auto reject_duplicate_keys = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) open_objects.emplace_back();
    if (event == json::parse_event_t::object_end) open_objects.pop_back();
    if (event == json::parse_event_t::key && !open_objects.back().insert(parsed.get<std::string>()).second) {
      throw ConfigError(file + ": " + parsed.get<std::string>() + ": given twice in one object");
    }
    return true;
  };
  const json root = parse_json_text(text, file, reject_duplicate_keys);
  if (!root.is_object())
    throw ConfigError(file + ": expected a JSON object of config fields at the top level");
  return root;
}

// Typed access to the top-level fields; an error names the file and the field. A null counts as absent.
class Fields {
 public:
  Fields(const json& root, std::string file) : root_(root), file_(std::move(file)) {}

  bool has(const char* key) const { return root_.contains(key) && !root_.at(key).is_null(); }
  const json& at(const char* key) const { return root_.at(key); }
  const std::string& file() const { return file_; }

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw ConfigError(file_ + ": " + field + ": " + what);
  }
  int positive(const char* key) const {
    if (!has(key)) fail(key, "missing; expected a positive integer");
    return bounded(key, 1);
  }
  int count(const char* key, int fallback) const { return has(key) ? bounded(key, 0) : fallback; }
  bool flag(const char* key) const {
    if (!has(key)) return false;
    if (!at(key).is_boolean()) fail(key, "expected true or false, got " + shown(at(key)));
    return at(key).get<bool>();
  }
  std::string text(const char* key) const {
    if (!at(key).is_string()) fail(key, "expected a string, got " + shown(at(key)));
    return at(key).get<std::string>();
  }

  static std::string shown(const json& value) {
    std::string dumped = value.dump();
    return dumped.size() > 40 ? dumped.substr(0, 40) + "..." : dumped;
  }

 private:
  int bounded(const char* key, int64_t least) const {
    const json& value = at(key);
    const std::string range =
        "expected an integer from " + std::to_string(least) + " to " + std::to_string(kMaxCardInteger);
    // nlohmann reads a non-negative integer as unsigned, a negative one as signed.
    const bool in_range = value.is_number_unsigned()
                              ? value.get<uint64_t>() <= uint64_t{kMaxCardInteger} &&
                                    value.get<uint64_t>() >= static_cast<uint64_t>(least)
                              : value.is_number_integer() && value.get<int64_t>() >= least &&
                                    value.get<int64_t>() <= kMaxCardInteger;
    if (!in_range) fail(key, range + ", got " + shown(value));
    return value.get<int>();
  }

  const json& root_;
  std::string file_;
};

// How messages name the model's type: `model_type "llama"`, or its architecture when model_type is absent.
std::string type_label(const Fields& f) {
  if (f.has("model_type")) return "model_type \"" + f.text("model_type") + "\"";
  const bool listed = f.has("architectures") && f.at("architectures").is_array() &&
                      !f.at("architectures").empty() && f.at("architectures")[0].is_string();
  if (listed) return "architectures[0] \"" + f.at("architectures")[0].get<std::string>() + "\"";
  f.fail("model_type", "missing, and no architectures list names the model class");
}

const Family& family_of(const Fields& f, const std::string& label) {
  for (const Family& family : kFamilies) {
    if (label == "model_type \"" + std::string(family.model_type) + "\"" ||
        label == "architectures[0] \"" + std::string(family.architecture) + "\"") {
      return family;
    }
  }
  std::string known;
  for (const Family& family : kFamilies)
    known += (known.empty() ? "" : ", ") + std::string(family.model_type);
  throw ConfigError(f.file() + ": " + label + ": not a decoder family kvtier can map (it maps " + known +
                    ")");
}

void require_attention_layout(const Fields& f, const std::string& label) {
  if (f.has("kv_lora_rank") || f.has("num_key_value_heads")) return;
  throw ConfigError(f.file() + ": " + label +
                    ": no attention layout kvtier can map (needs num_key_value_heads or kv_lora_rank)");
}

void map_attention(const Fields& f, ModelCard& card) {
  if (f.has("kv_lora_rank")) {
    card.attention = AttentionKind::kMla;
    card.kv_lora_rank = f.positive("kv_lora_rank");
    card.qk_rope_head_dim = f.positive("qk_rope_head_dim");
    card.qk_nope_head_dim = f.positive("qk_nope_head_dim");
    card.v_head_dim = f.positive("v_head_dim");
    card.q_lora_rank = f.count("q_lora_rank", 0);
    return;
  }
  card.attention = AttentionKind::kGqa;
  card.kv_heads = f.positive("num_key_value_heads");
  if (card.query_heads % card.kv_heads != 0) {
    f.fail("num_key_value_heads", "expected a divisor of num_attention_heads (" +
                                      std::to_string(card.query_heads) + "), got " +
                                      std::to_string(card.kv_heads));
  }
  if (f.has("head_dim")) {
    card.head_dim = f.positive("head_dim");
  } else if (card.hidden_size % card.query_heads == 0) {
    card.head_dim = card.hidden_size / card.query_heads;
  } else {
    f.fail("head_dim", "missing, and hidden_size " + std::to_string(card.hidden_size) +
                           " is not a multiple of num_attention_heads " + std::to_string(card.query_heads));
  }
}

// Leading dense layers: DeepSeek's first_k_dense_replace, or Qwen-MoE's mlp_only_layers when they are the
// first layers. Experts every layer after them (moe_layer_freq, decoder_sparse_step 1) is all kvtier maps.
int leading_dense_layers(const Fields& f) {
  for (const char* every_layer : {"moe_layer_freq", "decoder_sparse_step"}) {
    if (f.count(every_layer, 1) != 1)
      f.fail(every_layer, "kvtier maps experts in every layer after the dense ones (1)");
  }
  if (!f.has("mlp_only_layers")) return f.count("first_k_dense_replace", 0);
  const json& layers = f.at("mlp_only_layers");
  if (!layers.is_array()) f.fail("mlp_only_layers", "expected a list of layer indices");
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!layers[i].is_number_integer() || layers[i].get<int64_t>() != static_cast<int64_t>(i)) {
      f.fail("mlp_only_layers",
             "kvtier maps only leading dense layers (0, 1, ...), got " + Fields::shown(layers));
    }
  }
  return static_cast<int>(layers.size());
}

MoeShape map_experts(const Fields& f, const char* experts_key, int layers) {
  MoeShape moe{.routed_experts = f.positive(experts_key),
               .experts_per_token = f.positive("num_experts_per_tok")};
  // Mixtral and MiniMax name their experts' width intermediate_size.
  moe.expert_intermediate_size =
      f.positive(f.has("moe_intermediate_size") ? "moe_intermediate_size" : "intermediate_size");
  if (moe.experts_per_token > moe.routed_experts) {
    f.fail("num_experts_per_tok",
           "expected at most " + std::string(experts_key) + " (" + std::to_string(moe.routed_experts) + ")");
  }
  moe.shared_experts = f.count("n_shared_experts", 0);
  for (const char* width_key : {"shared_expert_intermediate_size", "shared_intermediate_size"}) {
    const int width = f.count(width_key, 0);
    if (width % moe.expert_intermediate_size != 0) {
      f.fail(width_key,
             "expected a multiple of the experts' width " + std::to_string(moe.expert_intermediate_size));
    }
    moe.shared_experts += width / moe.expert_intermediate_size;
    if (moe.shared_experts > kMaxCardInteger) {
      f.fail(width_key, "expected at most " + std::to_string(kMaxCardInteger) + " shared experts in all");
    }
  }
  moe.first_dense_layers = leading_dense_layers(f);
  if (moe.first_dense_layers >= layers) {
    f.fail(f.has("mlp_only_layers") ? "mlp_only_layers" : "first_k_dense_replace",
           "expected fewer dense layers than num_hidden_layers (" + std::to_string(layers) + ")");
  }
  return moe;
}

void map_mlp(const Fields& f, ModelCard& card) {
  for (const char* experts_key : {"n_routed_experts", "num_experts", "num_local_experts"}) {
    if (f.count(experts_key, 0) == 0) continue;
    card.moe = map_experts(f, experts_key, card.layers);
    card.intermediate_size =
        card.moe->first_dense_layers > 0 ? f.positive("intermediate_size") : f.count("intermediate_size", 0);
    return;
  }
  card.intermediate_size = f.positive("intermediate_size");
}

// MiniMax lists each layer's attention: 1 softmax attention, 0 linear (lightning) attention.
void require_softmax_attention(const Fields& f) {
  if (!f.has("attn_type_list")) return;
  const json& types = f.at("attn_type_list");
  const bool all_softmax = types.is_array() && std::all_of(types.begin(), types.end(), [](const json& t) {
                             return t.is_number_integer() && t.get<int64_t>() == 1;
                           });
  if (!all_softmax)
    f.fail("attn_type_list", "kvtier maps softmax attention (1) in every layer, got " + Fields::shown(types));
}

struct WeightType {
  std::string name;  // as a card's weight_dtype
  double bytes_per_param;
};

// A quantization_config's method wins over torch_dtype (DeepSeek-V3 says bfloat16 and ships fp8 weights).
WeightType weight_type(const Fields& f) {
  if (f.has("quantization_config")) {
    const json& quantization = f.at("quantization_config");
    const json method = quantization.is_object() ? quantization.value("quant_method", json()) : json();
    if (method == "fp8") return {"fp8", 1};
    if ((method == "awq" || method == "gptq") && quantization.value("bits", json()) == 4)
      return {"int4", 0.5};
    f.fail("quantization_config.quant_method",
           "expected fp8, or awq or gptq with bits 4; got " + Fields::shown(method));
  }
  const char* key = f.has("torch_dtype") ? "torch_dtype" : "dtype";
  if (!f.has(key)) return {"bf16", 2};
  const std::string dtype = f.text(key);
  if (dtype == "bfloat16") return {"bf16", 2};
  if (dtype == "float16") return {"fp16", 2};
  if (dtype == "float32") return {"fp32", 4};
  f.fail(key, "expected bfloat16, float16 or float32, got \"" + dtype + "\"");
}

// "llama-3.1-8b-config.json" -> "llama-3.1-8b"; ".../Llama-3.1-8B/config.json" -> "Llama-3.1-8B".
std::string card_name(const std::string& file) {
  const std::filesystem::path path(file);
  std::string stem = path.stem().string();
  if (stem == "config") {
    std::string folder = std::filesystem::absolute(path).parent_path().filename().string();
    return folder.empty() ? stem : folder;
  }
  for (std::string_view suffix : {"-config", "_config", ".config"}) {
    if (stem.size() > suffix.size() && stem.ends_with(suffix))
      return stem.substr(0, stem.size() - suffix.size());
  }
  return stem;
}

double attention_weights(const ModelCard& c, const ExtraWeights& extra) {
  const double hidden = c.hidden_size;
  const double heads = c.query_heads;
  if (c.attention == AttentionKind::kMla) {
    const double q_width = heads * (c.qk_nope_head_dim + c.qk_rope_head_dim);
    const double q = c.q_lora_rank > 0 ? hidden * c.q_lora_rank + c.q_lora_rank +
                                             static_cast<double>(c.q_lora_rank) * q_width
                                       : hidden * q_width;
    const double kv = hidden * (c.kv_lora_rank + c.qk_rope_head_dim) + c.kv_lora_rank +
                      static_cast<double>(c.kv_lora_rank) * heads * (c.qk_nope_head_dim + c.v_head_dim);
    return q + kv + heads * c.v_head_dim * hidden;
  }
  const double q = heads * c.head_dim;
  const double kv = 2.0 * c.kv_heads * c.head_dim;
  return hidden * (q + kv) + q * hidden + (extra.qkv_bias ? q + kv : 0) + (extra.output_bias ? hidden : 0);
}

}  // namespace

ParameterCounts count_parameters(const ModelCard& c, const ExtraWeights& extra) {
  const double hidden = c.hidden_size;
  const double embeddings = static_cast<double>(c.vocab_size) * hidden * (extra.tied_embeddings ? 1 : 2);
  const int dense_layers = c.moe ? c.moe->first_dense_layers : c.layers;
  double shared = embeddings + hidden + c.layers * (attention_weights(c, extra) + 2 * hidden) +
                  dense_layers * 3 * hidden * c.intermediate_size;
  ParameterCounts counts{.total = shared, .active = shared};
  if (c.moe) {
    const double expert = 3 * hidden * c.moe->expert_intermediate_size;
    const double moe_layers = c.layers - dense_layers;
    const double router = hidden * c.moe->routed_experts;
    counts.total += moe_layers * (router + expert * (c.moe->routed_experts + c.moe->shared_experts));
    counts.active += moe_layers * (router + expert * (c.moe->experts_per_token + c.moe->shared_experts));
  }
  return counts;
}

ModelCard parse_hf_config(const std::string& text, const std::string& file) {
  const json root = parse_json(text, file);
  const Fields f(root, file);
  const std::string label = type_label(f);
  require_attention_layout(f, label);
  const Family& family = family_of(f, label);
  ModelCard card;
  card.name = card_name(file);
  card.source = file + " (Hugging Face config, " + label + ")";
  card.layers = f.positive("num_hidden_layers");
  card.hidden_size = f.positive("hidden_size");
  card.query_heads = f.positive("num_attention_heads");
  card.vocab_size = f.positive("vocab_size");
  map_attention(f, card);
  if (std::string problem = kv_size_problem(card); !problem.empty()) throw ConfigError(file + ": " + problem);
  require_softmax_attention(f);
  map_mlp(f, card);
  const WeightType weights = weight_type(f);
  card.weight_dtype = weights.name;
  card.weight_bytes_per_param = weights.bytes_per_param;
  const bool attention_bias = f.flag("attention_bias");
  const ParameterCounts counts = count_parameters(card, {.tied_embeddings = f.flag("tie_word_embeddings"),
                                                         .qkv_bias = family.qkv_bias || attention_bias,
                                                         .output_bias = attention_bias});
  card.total_params = counts.total;
  card.active_params = counts.active;
  return card;
}

ModelCard load_hf_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot open file");
  std::string text(kMaxConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw ConfigError(path + ": cannot read file");
  if (static_cast<size_t>(in.gcount()) > kMaxConfigBytes) {
    throw ConfigError(path + ": larger than 16 MiB, expected a Hugging Face config.json");
  }
  text.resize(static_cast<size_t>(in.gcount()));
  return parse_hf_config(text, path);
}

}  // namespace kvtier
