// Tier configuration: sizes from layouts, defaults, and errors that name the file, line and key.
#include "tier_spec.h"

#include <gtest/gtest.h>

#include "embedded_files.h"

namespace kvtier {
namespace {

ModelCard llama70b() {
  return parse_model_card(load_config("llama-3.1-70b", "models"));
}

std::vector<TierSpec> parse(const std::string& yaml) {
  ConfigNode root = ConfigNode::load_string(yaml, "tiers.yaml");
  return parse_tiers(root.child("tiers"), llama70b(), 512);
}

std::string error_of(const std::string& yaml) {
  try {
    parse(yaml);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

// Llama-3.1-70B bf16: 327,680 B/token, so a 512-token block is 160 MiB and 40 GiB holds 256 blocks.
// turboquant4 (layers 0-1 and 78-79 bf16 at 4,096 B/token/layer, 76 layers of 8 × 136 B slots):
// 16,384 + 82,688 = 99,072 B/token, 50,724,864 B/block; 512 GiB / that = 10,837.99: 10,837 whole blocks.
TEST(ParseTiers, CapacityInBlocksFollowsEachTiersLayout) {
  auto tiers = parse(R"(
tiers:
  - {name: hbm, capacity: 40GiB, kv: bf16}
  - {name: dram, capacity: 512GiB, kv: turboquant4, policy: s3fifo, placement: exclusive, admit_after: 2}
)");
  ASSERT_EQ(tiers.size(), 2u);
  EXPECT_EQ(tiers[0].bytes_per_block(), 167772160);
  EXPECT_EQ(tiers[0].capacity_blocks(), 256);
  EXPECT_EQ(tiers[0].policy, PolicyKind::kLru);
  EXPECT_EQ(tiers[1].bytes_per_block(), 50724864);
  EXPECT_EQ(tiers[1].capacity_blocks(), 10837);
  EXPECT_EQ(tiers[1].policy, PolicyKind::kS3Fifo);
  EXPECT_EQ(tiers[1].placement, Placement::kExclusive);
  EXPECT_EQ(tiers[1].write, WriteMode::kSpill);
  EXPECT_EQ(tiers[1].admit_after, 2);
  EXPECT_TRUE(tiers[1].promote_on_hit);
}

TEST(ParseTiers, CapacityInTokensOrBlocks) {
  auto tiers = parse(R"(
tiers:
  - {name: hbm, capacity_tokens: 100000, kv: fp8}
  - {name: dram, capacity_blocks: 300, kv: {encoding: int4}, write: through}
)");
  EXPECT_EQ(tiers[0].capacity_blocks(), 195);  // 100,000 / 512
  EXPECT_EQ(tiers[1].capacity_blocks(), 300);
  EXPECT_EQ(tiers[1].write, WriteMode::kThrough);
}

TEST(ParseTiers, UnknownKeyIsLocatedWithSuggestion) {
  std::string error = error_of("tiers:\n  - {name: hbm, capacity: 1GiB, kv: bf16, polcy: lru}\n");
  EXPECT_NE(error.find("tiers.yaml:2"), std::string::npos) << error;
  EXPECT_NE(error.find("policy"), std::string::npos) << error;
}

TEST(ParseTiers, RejectsContradictionsAndBadValues) {
  EXPECT_NE(error_of("tiers:\n  - {name: hbm, capacity: 1GiB, kv: bf16, policy: lruu}\n")
                .find("did you mean 'lru'"),
            std::string::npos);
  EXPECT_NE(error_of("tiers:\n  - {name: hbm, capacity: 1GiB, kv: bf16, placement: exclusive}\n")
                .find("applies to lower tiers only"),
            std::string::npos);
  EXPECT_NE(error_of("tiers:\n  - {name: a, capacity: 1GiB, kv: bf16}\n"
                     "  - {name: b, capacity: 1GiB, kv: bf16, placement: exclusive, write: through}\n")
                .find("needs placement: inclusive"),
            std::string::npos);
  EXPECT_NE(error_of("tiers:\n  - {name: a, kv: bf16}\n").find("exactly one of capacity"), std::string::npos);
  EXPECT_NE(error_of("tiers:\n  - {name: a, capacity: 12, kv: bf16}\n").find("tiers.yaml:2"),
            std::string::npos);
  EXPECT_NE(
      error_of("tiers:\n  - {name: a, capacity: 1GiB, kv: bf16}\n  - {name: a, capacity: 1GiB, kv: bf16}\n")
          .find("unique"),
      std::string::npos);
  EXPECT_NE(error_of("tiers: []\n").find("at least one tier"), std::string::npos);
}

}  // namespace
}  // namespace kvtier
