#include "sim/core/kv_layout.h"

#include <gtest/gtest.h>

#include <climits>
#include <functional>

#include "sim/core/config_files.h"

namespace kvtier {
namespace {

ModelCard card(const std::string& name) {
  return parse_model_card(load_config(name, "models"));
}

TEST(KvLayout, Llama70BBf16Is320KiBPerToken) {
  // 2 (K and V) × 8 KV heads × 128 × 2 B × 80 layers, as the Mooncake paper states.
  KvLayout layout = resolve_kv_layout(card("llama-3.1-70b"), "bf16");
  EXPECT_EQ(layout.bytes_per_token(), 2 * 8 * 128 * 2 * 80);
  EXPECT_EQ(layout.bytes_per_token(), 327680);
  EXPECT_EQ(layout.bytes_per_block(512), 327680LL * 512);
}

TEST(KvLayout, TurboQuantSlotIsHeadDimPlusSixPaddedToEight) {
  EXPECT_EQ(turboquant_slot_bytes(128, 8), 136);  // 64 + 2 + 64 + 2 + 2 = 134 -> 136
  EXPECT_EQ(turboquant_slot_bytes(128, 2), 134);
  EXPECT_EQ(turboquant_slot_bytes(64, 8), 72);  // 32 + 2 + 32 + 2 + 2 = 70 -> 72
}

TEST(KvLayout, MiniMaxTurboQuantMatchesTheSeed) {
  ModelCard m = card("minimax-m2.5");
  KvLayout layout = resolve_kv_layout(m, "turboquant4");
  ASSERT_EQ(layout.groups.size(), 3u);
  EXPECT_EQ(layout.groups[0].layer_count, 2);
  EXPECT_EQ(layout.groups[1].layer_count, 58);
  EXPECT_EQ(layout.groups[2].first_layer, 60);
  // 4 × 8 × 512 B + 58 × 8 × 136 B against 62 × 8 × 512 B.
  EXPECT_EQ(layout.bytes_per_token(), 4 * 8 * 512 + 58 * 8 * 136);
  EXPECT_NEAR(layout.compression_vs_bf16(m), 3.19, 0.005);
  // A packed layer alone: 512 / 136.
  EXPECT_NEAR(static_cast<double>(layout.groups[0].bytes_per_token_per_layer) /
                  static_cast<double>(layout.groups[1].bytes_per_token_per_layer),
              3.76, 0.005);
}

TEST(KvLayout, GroupScaledInt4CostsFiveBitsAtGroup32) {
  ModelCard m = card("llama-3.1-8b");
  double elements = 2.0 * 8 * 128 * 32;
  EXPECT_DOUBLE_EQ(resolve_kv_layout(m, "int4").bytes_per_token() * 8 / elements, 5.0);
  EXPECT_DOUBLE_EQ(resolve_kv_layout(m, "int4-g128").bytes_per_token() * 8 / elements, 4.25);
  EXPECT_EQ(resolve_kv_layout(m, "fp8").bytes_per_token(), 2 * 8 * 128 * 32);
}

TEST(KvLayout, MlaCachesOneLatentPerLayer) {
  ModelCard m = card("deepseek-v3");
  EXPECT_EQ(resolve_kv_layout(m, "bf16").bytes_per_token(), (512 + 64) * 2 * 61);
  EXPECT_EQ(resolve_kv_layout(m, "int4").bytes_per_token(), (288 + 18 * 4) * 61);
  EXPECT_THROW(resolve_kv_layout(m, "turboquant4"), ConfigError);
}

TEST(KvLayout, PrecisionMapFromYaml) {
  ConfigNode root = ConfigNode::load_string(
      "kv:\n  encoding: {kind: int4, group_size: 128, scale_dtype: fp32, zero_point: false}\n"
      "  boundary_layers: {first: 1, last: 3}\n",
      "kv.yaml");
  ModelCard m = card("llama-3.1-8b");
  KvLayout layout = build_layout(m, parse_precision_map(root.child("kv")), "custom");
  ASSERT_EQ(layout.groups.size(), 3u);
  EXPECT_EQ(layout.groups[1].bytes_per_token_per_layer, 2 * 8 * (64 + 4));
  EXPECT_EQ(layout.groups[2].layer_count, 3);
  EXPECT_EQ(layout.groups[2].encoding.name(), "bf16");
}

TEST(KvLayout, BoundaryLayersMustFit) {
  PrecisionMap map = *kv_preset("turboquant4");
  map.first_boundary_layers = 79;  // 79 + 2 > 80 layers
  EXPECT_THROW(build_layout(card("llama-3.1-70b"), map, "x"), ConfigError);
  EXPECT_THROW(resolve_kv_layout(card("llama-3.1-70b"), "int3"), ConfigError);
}

std::string error_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

ModelCard gqa_card(int layers, int kv_heads, int head_dim) {
  return parse_model_card(ConfigNode::load_string(
      "name: big\nlayers: " + std::to_string(layers) + "\nhidden_size: 4096\nquery_heads: 32\n" +
          "attention: {kind: gqa, kv_heads: " + std::to_string(kv_heads) +
          ", head_dim: " + std::to_string(head_dim) + "}\ntotal_params: 1e9\n",
      "m.yaml"));
}

// Before, group_size and first were cast to int: 2^32 + 32 became a group of 32, 2^32 + 2 two layers.
TEST(KvLayout, PrecisionMapIntegersOutsideTheirRangeAreErrors) {
  auto map_error = [](const std::string& yaml) {
    return error_of([&] { parse_precision_map(ConfigNode::load_string(yaml, "kv.yaml").child("kv")); });
  };
  EXPECT_EQ(map_error("kv: {encoding: {kind: int4, group_size: 4294967328}}"),
            "kv.yaml:1:41: kv.encoding.group_size: expected a group size from 1 to 16777216, got 4294967328");
  EXPECT_EQ(map_error("kv: {encoding: {kind: turboquant4, slot_align: 0}}"),
            "kv.yaml:1:48: kv.encoding.slot_align: expected an alignment in bytes from 1 to 65536, got 0");
  EXPECT_EQ(
      map_error("kv: {encoding: fp8, boundary_layers: {first: 4294967298}}"),
      "kv.yaml:1:46: kv.boundary_layers.first: expected a layer count from 0 to 16777216, got 4294967298");
}

TEST(KvLayout, CardsBeyondOneGiBPerTokenAreErrors) {
  // 2 × 4096 × 4096 × 2 B = 64 MiB per layer in bf16: 16 layers are exactly 1 GiB, 17 are over.
  EXPECT_EQ(resolve_kv_layout(gqa_card(16, 4096, 4096), "bf16").bytes_per_token(), 1073741824);
  EXPECT_EQ(error_of([] { gqa_card(17, 4096, 4096); }),
            "m.yaml:5:12: attention: the KV of one token would take 1140850688 B in bf16 over 17 layers; the "
            "limit is 1073741824 B (1 GiB) per token");
}

TEST(KvLayout, LayoutsBeyondOneGiBPerTokenAreErrors) {
  // bf16: 2 × 4096 × 4096 × 2 B × 4 layers = 256 MiB per token. int4 in groups of one element with an fp32
  // scale and zero costs 2048 + 4096 × 8 = 34,816 B per head vector: × 2 × 4096 × 4 = 1,140,850,688 B,
  // over the limit; with fp16 scales 2048 + 4096 × 4 = 18,432 B: 603,979,776 B, under it.
  ModelCard m = gqa_card(4, 4096, 4096);
  auto layout = [&](const std::string& scale) {
    return build_layout(
        m,
        parse_precision_map(
            ConfigNode::load_string("kv: {encoding: {kind: int4, group_size: 1, scale_dtype: " + scale + "}}",
                                    "kv.yaml")
                .child("kv")),
        "int4-g1-" + scale);
  };
  EXPECT_EQ(layout("fp16").bytes_per_token(), 603979776);
  EXPECT_EQ(error_of([&] { layout("fp32"); }),
            "KV layout int4-g1-fp32 of big takes more than 1073741824 B (1 GiB) per token, the limit");
}

TEST(KvLayout, ArithmeticOnUncheckedCardsCannotWrap) {
  // A card built in code skips parse_model_card's limit: 2 × (2^31 - 1)^2 elements fit int64_t (before,
  // the product was an int and wrapped), twice as many bytes do not.
  ModelCard m;
  m.name = "huge";
  m.layers = 1;
  m.kv_heads = INT_MAX;
  m.head_dim = INT_MAX;
  EXPECT_EQ(m.kv_elements_per_layer(), 9223372028264841218);
  EXPECT_EQ(error_of([&] { bytes_per_token_per_layer(m, Encoding{}); }),
            "huge: KV bytes per token overflow 64-bit integers");
}

TEST(KvLayout, BytesPerBlockStopsAtInt64) {
  // 131,072 = 2^17 B per token: 2^45 tokens make 2^62 B, 2^46 tokens 2^63 B, one more than int64_t holds.
  KvLayout layout = resolve_kv_layout(card("llama-3.1-8b"), "bf16");
  EXPECT_EQ(layout.bytes_per_block(int64_t{1} << 45), int64_t{1} << 62);
  EXPECT_EQ(
      error_of([&] { layout.bytes_per_block(int64_t{1} << 46); }),
      "KV layout bf16: a block of 70368744177664 tokens at 131072 B per token exceeds 9223372036854775807 B");
}

TEST(KvLayout, EveryCardAndPresetBuilds) {
  std::vector<std::string> names = embedded_names("models");
  ASSERT_GE(names.size(), 5u);
  for (const std::string& name : names) {
    ModelCard m = card(name);
    for (const std::string& preset : kv_preset_names()) {
      if (m.attention == AttentionKind::kMla && preset.starts_with("turboquant")) continue;
      KvLayout layout = resolve_kv_layout(m, preset);
      int layers = 0;
      for (const LayerGroup& g : layout.groups) layers += g.layer_count;
      EXPECT_EQ(layers, m.layers) << name << " " << preset;
      EXPECT_GE(layout.compression_vs_bf16(m), 1.0) << name << " " << preset;
    }
  }
}

}  // namespace
}  // namespace kvtier
