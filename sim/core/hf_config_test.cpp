#include "sim/core/hf_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/core/config_error_test_support.h"
#include "sim/core/config_files.h"

namespace kvtier {
namespace {

using testing::error_of;

ModelCard committed(const std::string& name) {
  return load_hf_config("models/hf/" + name + "-config.json");
}

// Published parameter counts (the models' cards and reports), against the count from the shape.
TEST(HfConfig, ParameterCountsMatchThePublishedOnesWithinTwoPercent) {
  struct Published {
    const char* model;
    double total;
    double active;
  };
  for (const Published& p :
       {Published{"llama-3.1-8b", 8.03e9, 8.03e9}, Published{"llama-3.1-70b", 70.6e9, 70.6e9},
        Published{"qwen3-32b", 32.8e9, 32.8e9}, Published{"qwen3-30b-a3b", 30.5e9, 3.3e9},
        Published{"deepseek-v3", 671e9, 37e9}}) {
    const ModelCard card = committed(p.model);
    EXPECT_NEAR(card.total_params / p.total, 1.0, 0.02) << p.model << ": " << card.total_params;
    EXPECT_NEAR(card.active_params / p.active, 1.0, 0.02) << p.model << ": " << card.active_params;
  }
}

// The built-in card and the config.json of the same model describe one shape.
TEST(HfConfig, CommittedConfigsMapToTheBuiltInCardsShapes) {
  for (const char* model : {"llama-3.1-8b", "llama-3.1-70b", "qwen3-32b", "qwen3-30b-a3b", "deepseek-v3"}) {
    ModelCard from_json = committed(model);
    const ModelCard card = parse_model_card(load_config(model, "models"));
    from_json.name = card.name;
    from_json.source = card.source;
    from_json.total_params = card.total_params;
    from_json.active_params = card.active_params;
    EXPECT_EQ(from_json, card) << model << "\n"
                               << model_card_yaml(from_json) << "\n"
                               << model_card_yaml(card);
  }
}

TEST(HfConfig, NamesComeFromTheFile) {
  EXPECT_EQ(committed("llama-3.1-8b").name, "llama-3.1-8b");
  EXPECT_EQ(committed("llama-3.1-8b").source,
            "models/hf/llama-3.1-8b-config.json (Hugging Face config, model_type \"llama\")");
  const std::filesystem::path folder = std::filesystem::temp_directory_path() / "Meta-Llama-3.1-8B";
  std::filesystem::create_directories(folder);
  std::filesystem::copy_file("models/hf/llama-3.1-8b-config.json", folder / "config.json",
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ(load_hf_config((folder / "config.json").string()).name, "Meta-Llama-3.1-8B");
}

// A small config whose weights are counted by hand below.
std::string tiny(const std::string& extra, const std::string& model_type = "llama") {
  return R"({"model_type": ")" + model_type +
         R"(", "num_hidden_layers": 2, "hidden_size": 8, "num_attention_heads": 2,
             "num_key_value_heads": 1, "head_dim": 4, "intermediate_size": 16, "vocab_size": 10)" +
         extra + "}";
}

TEST(HfConfig, DenseCountsByHand) {
  // Per layer: Q 8x8, K and V 8x4 each, O 8x8 = 192; two norms 16; MLP 3 x 8 x 16 = 384: 592.
  // Two layers 1,184, embeddings and LM head 2 x 10 x 8 = 160, final norm 8: 1,352.
  const ModelCard card = parse_hf_config(tiny(""), "tiny.json");
  EXPECT_EQ(card.total_params, 1352);
  EXPECT_EQ(card.active_params, 1352);
  EXPECT_EQ(card.head_dim, 4);
  EXPECT_EQ(card.kv_heads, 1);
  EXPECT_EQ(card.weight_dtype, "bf16");
  // Tied embeddings drop the LM head (80); attention_bias adds Q, K, V (16) and O (8) biases per layer.
  EXPECT_EQ(parse_hf_config(tiny(R"(, "tie_word_embeddings": true)"), "tiny.json").total_params, 1272);
  EXPECT_EQ(parse_hf_config(tiny(R"(, "attention_bias": true)"), "tiny.json").total_params, 1352 + 2 * 24);
}

TEST(HfConfig, MoeCountsByHand) {
  // Layer 0 dense (592). Layer 1: attention and norms 208, router 8 x 4 = 32, experts of 3 x 8 x 6 = 144:
  // 4 routed + 1 shared = 720 in all, 2 + 1 = 432 active.
  const ModelCard card =
      parse_hf_config(tiny(R"(, "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1,
              "moe_intermediate_size": 6, "first_k_dense_replace": 1)",
                           "deepseek_v3"),
                      "moe.json");
  ASSERT_TRUE(card.moe);
  EXPECT_EQ(*card.moe, (MoeShape{.routed_experts = 4,
                                 .experts_per_token = 2,
                                 .shared_experts = 1,
                                 .expert_intermediate_size = 6,
                                 .first_dense_layers = 1}));
  EXPECT_EQ(card.total_params, 160 + 8 + 592 + 208 + 32 + 720);
  EXPECT_EQ(card.active_params, 160 + 8 + 592 + 208 + 32 + 432);
}

TEST(HfConfig, MlaCountsByHand) {
  // Q: 8x5 down, its norm 5, 5 x (2 heads x (3 + 2)) up = 95. KV: 8 x (4 + 2) down, norm 4,
  // 4 x (2 x (3 + 3)) up = 100. O: 2 x 3 x 8 = 48. Per layer 243 + norms 16 + MLP 384 = 643.
  const ModelCard card = parse_hf_config(
      R"({"model_type": "deepseek_v3", "num_hidden_layers": 2, "hidden_size": 8, "num_attention_heads": 2,
          "num_key_value_heads": 2, "kv_lora_rank": 4, "qk_rope_head_dim": 2, "qk_nope_head_dim": 3,
          "v_head_dim": 3, "q_lora_rank": 5, "intermediate_size": 16, "vocab_size": 10})",
      "mla.json");
  EXPECT_EQ(card.attention, AttentionKind::kMla);
  EXPECT_EQ(card.q_lora_rank, 5);
  EXPECT_EQ(card.total_params, 160 + 8 + 2 * 643);
}

TEST(HfConfig, ExplicitHeadDimNeedNotBeHiddenOverHeads) {
  const ModelCard card = committed("qwen3-32b");
  EXPECT_EQ(card.hidden_size / card.query_heads, 80);
  EXPECT_EQ(card.head_dim, 128);
}

// Mixtral names its experts num_local_experts and their width intermediate_size (mistralai/Mixtral-8x7B-v0.1
// config.json); 46.7 B total and 12.9 B active parameters (Mistral's announcement).
TEST(HfConfig, MixtralStyleExperts) {
  const ModelCard card = parse_hf_config(
      R"({"architectures": ["MixtralForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
          "num_attention_heads": 32, "num_experts_per_tok": 2, "num_hidden_layers": 32,
          "num_key_value_heads": 8, "num_local_experts": 8, "tie_word_embeddings": false,
          "torch_dtype": "bfloat16", "vocab_size": 32000})",
      "mixtral.json");
  ASSERT_TRUE(card.moe);
  EXPECT_EQ(card.moe->expert_intermediate_size, 14336);
  EXPECT_EQ(card.moe->routed_experts, 8);
  EXPECT_NEAR(card.total_params / 46.7e9, 1.0, 0.02) << card.total_params;
  EXPECT_NEAR(card.active_params / 12.9e9, 1.0, 0.02) << card.active_params;
}

TEST(HfConfig, WeightTypeFromTorchDtypeOrQuantization) {
  EXPECT_EQ(committed("deepseek-v3").weight_dtype, "fp8");
  EXPECT_EQ(committed("deepseek-v3").weight_bytes_per_param, 1);
  const ModelCard fp32 = parse_hf_config(tiny(R"(, "torch_dtype": "float32")"), "t.json");
  EXPECT_EQ(fp32.weight_dtype, "fp32");
  EXPECT_EQ(fp32.weight_bytes_per_param, 4);
  EXPECT_EQ(parse_hf_config(tiny(R"(, "dtype": "float16")"), "t.json").weight_dtype, "fp16");
  EXPECT_EQ(parse_hf_config(tiny(R"(, "quantization_config": {"quant_method": "awq", "bits": 4})"), "t.json")
                .weight_bytes_per_param,
            0.5);
  EXPECT_EQ(error_of([] { parse_hf_config(tiny(R"(, "torch_dtype": "int8")"), "t.json"); }),
            "t.json: torch_dtype: expected bfloat16, float16 or float32, got \"int8\"");
}

TEST(HfConfig, AnArchitectureItCannotMapIsNamed) {
  EXPECT_EQ(
      error_of([] {
        parse_hf_config(R"({"model_type": "mamba", "hidden_size": 768, "num_hidden_layers": 24,
                                  "vocab_size": 50280, "state_size": 16})",
                        "config.json");
      }),
      "config.json: model_type \"mamba\": no attention layout kvtier can map (needs num_key_value_heads or "
      "kv_lora_rank)");
  EXPECT_EQ(
      error_of([] { parse_hf_config(tiny("", "phi3"), "c.json"); }),
      "c.json: model_type \"phi3\": not a decoder family kvtier can map (it maps llama, mistral, qwen2, "
      "qwen3, mixtral, qwen3_moe, deepseek_v2, deepseek_v3, minimax_m2, minimax)");
  EXPECT_EQ(
      error_of([] {
        parse_hf_config(R"({"architectures": ["GPT2LMHeadModel"], "n_head": 12, "num_key_value_heads": 12})",
                        "c.json");
      }),
      "c.json: architectures[0] \"GPT2LMHeadModel\": not a decoder family kvtier can map (it maps llama, "
      "mistral, qwen2, qwen3, mixtral, qwen3_moe, deepseek_v2, deepseek_v3, minimax_m2, minimax)");
  EXPECT_EQ(error_of([] { parse_hf_config(R"({"num_key_value_heads": 8})", "c.json"); }),
            "c.json: model_type: missing, and no architectures list names the model class");
  EXPECT_EQ(error_of([] { parse_hf_config(tiny(R"(, "attn_type_list": [0, 1])", "minimax"), "c.json"); }),
            "c.json: attn_type_list: kvtier maps softmax attention (1) in every layer, got [0,1]");
}

TEST(HfConfig, ExpertLayoutsItCannotMapAreNamed) {
  const std::string experts = R"(, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 6)";
  auto qwen_moe = [&](const std::string& extra) {
    return parse_hf_config(tiny(experts + extra, "qwen3_moe"), "c.json");
  };
  EXPECT_EQ(qwen_moe(R"(, "mlp_only_layers": [0])").moe->first_dense_layers, 1);
  EXPECT_EQ(error_of([&] { qwen_moe(R"(, "mlp_only_layers": [1])"); }),
            "c.json: mlp_only_layers: kvtier maps only leading dense layers (0, 1, ...), got [1]");
  EXPECT_EQ(error_of([&] { qwen_moe(R"(, "decoder_sparse_step": 2)"); }),
            "c.json: decoder_sparse_step: kvtier maps experts in every layer after the dense ones (1)");
  EXPECT_EQ(error_of([] {
              parse_hf_config(tiny(R"(, "num_local_experts": 2, "num_experts_per_tok": 3)", "mixtral"),
                              "c.json");
            }),
            "c.json: num_experts_per_tok: expected at most num_local_experts (2)");
  EXPECT_EQ(error_of([&] { qwen_moe(R"(, "shared_expert_intermediate_size": 7)"); }),
            "c.json: shared_expert_intermediate_size: expected a multiple of the experts' width 6");
  EXPECT_EQ(qwen_moe(R"(, "shared_expert_intermediate_size": 12)").moe->shared_experts, 2);
}

TEST(HfConfig, ValuesAreChecked) {
  EXPECT_EQ(error_of([] { parse_hf_config(tiny(R"(, "num_hidden_layers": "2")"), "c.json"); }),
            "c.json: num_hidden_layers: given twice in one object");
  EXPECT_EQ(error_of([] {
              parse_hf_config(
                  R"({"model_type": "llama", "num_hidden_layers": "32", "num_key_value_heads": 8})",
                  "c.json");
            }),
            "c.json: num_hidden_layers: expected an integer from 1 to 16777216, got \"32\"");
  EXPECT_EQ(error_of([] {
              parse_hf_config(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 8,
                                  "num_attention_heads": 2, "num_key_value_heads": 0, "vocab_size": 4})",
                              "c.json");
            }),
            "c.json: num_key_value_heads: expected an integer from 1 to 16777216, got 0");
  EXPECT_EQ(error_of([] {
              parse_hf_config(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 9,
                                  "num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": 4})",
                              "c.json");
            }),
            "c.json: head_dim: missing, and hidden_size 9 is not a multiple of num_attention_heads 2");
  EXPECT_EQ(error_of([] {
              parse_hf_config(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 8,
                                  "num_attention_heads": 4, "num_key_value_heads": 3, "vocab_size": 4})",
                              "c.json");
            }),
            "c.json: num_key_value_heads: expected a divisor of num_attention_heads (4), got 3");
  EXPECT_EQ(error_of([] {
              parse_hf_config(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 8,
                                  "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 4})",
                              "c.json");
            }),
            "c.json: intermediate_size: missing; expected a positive integer");
  EXPECT_EQ(error_of([] {
              parse_hf_config(R"({"model_type": "llama", "num_hidden_layers": 16777216, "hidden_size": 65536,
                                  "num_attention_heads": 512, "num_key_value_heads": 512, "vocab_size": 4,
                                  "intermediate_size": 8})",
                              "c.json");
            }).rfind("c.json: the KV of one token would take ", 0),
            0u);
  EXPECT_EQ(error_of([] { parse_hf_config("[1, 2]", "c.json"); }),
            "c.json: expected a JSON object of config fields at the top level");
}

TEST(HfConfig, BadJsonIsLocatedByLineAndColumn) {
  EXPECT_EQ(
      error_of([] { parse_hf_config("{\n  \"a\": 1,\n  \"b\": }\n", "c.json"); }),
      "c.json:3:8: invalid JSON: syntax error while parsing value - unexpected '}'; expected '[', '{', or "
      "a literal");
  EXPECT_EQ(error_of([] { parse_hf_config("{\"a\": 1", "c.json"); }).rfind("c.json:1:8: invalid JSON: ", 0),
            0u);
  EXPECT_EQ(error_of([] { parse_hf_config("", "c.json"); }).rfind("c.json:1:1: invalid JSON: ", 0), 0u);
  EXPECT_EQ(error_of([] { parse_hf_config(R"({"rope_theta": 1e999})", "c.json"); }),
            "c.json:1:16: invalid JSON: number overflow parsing '1e999'");
}

// Every reader of model cards goes through load_config, which reads a .json path as a config.json.
TEST(HfConfig, LoadConfigReadsAJsonPathAsAModelCard) {
  const std::string path = "models/hf/deepseek-v3-config.json";
  EXPECT_EQ(parse_model_card(load_config(path, "models")), load_hf_config(path));
  EXPECT_EQ(load_model_card(path), load_hf_config(path));
  EXPECT_EQ(error_of([] {
              load_config("models/hf/absent-config.json", "models");
            }).rfind("models/hf/absent-config.json: no such file", 0),
            0u);
  EXPECT_EQ(error_of([] { load_hf_config("models/hf/absent-config.json"); }),
            "models/hf/absent-config.json: cannot open file");
}

// The built-in cards' shapes account for their stated parameters (MiniMax's stated 10 B active leaves out
// the 1.2 B of embeddings and LM head that the count includes).
TEST(HfConfig, BuiltInCardsShapesAccountForTheirStatedParameters) {
  for (const std::string& name : embedded_names("models")) {
    const ModelCard card = parse_model_card(load_config(name, "models"));
    const ParameterCounts counts = count_parameters(card);
    EXPECT_NEAR(counts.total / card.total_params, 1.0, 0.02) << name << ": " << counts.total;
    if (name != "minimax-m2.5") {
      EXPECT_NEAR(counts.active / card.active_params, 1.0, 0.02) << name;
    }
  }
}

}  // namespace
}  // namespace kvtier
