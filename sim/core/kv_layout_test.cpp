#include "kv_layout.h"

#include <gtest/gtest.h>

#include "embedded_files.h"

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
