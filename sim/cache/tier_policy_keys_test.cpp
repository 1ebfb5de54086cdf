// The tier keys that parameterize eviction: policy as a map with S3-FIFO's move_to_main_threshold, and
// recency_order; defaults, values and located errors.
#include <gtest/gtest.h>

#include "sim/core/config_files.h"
#include "sim/cache/tier_spec.h"

namespace kvtier {
namespace {

std::vector<TierSpec> parse(const std::string& tier) {
  ConfigNode root = ConfigNode::load_string("tiers:\n  - " + tier + "\n", "tiers.yaml");
  return parse_tiers(root.child("tiers"), parse_model_card(load_config("llama-3.1-8b", "models")), 16);
}

std::string error_of(const std::string& tier) {
  try {
    parse(tier);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(TierPolicyKeys, DefaultsAreThePapersThresholdAndFirstBlockMostRecent) {
  TierSpec tier = parse("{medium: hbm, capacity_blocks: 10, kv: bf16, policy: s3fifo}")[0];
  EXPECT_EQ(tier.policy, PolicyKind::kS3Fifo);
  EXPECT_EQ(tier.policy_options.move_to_main_threshold, 2);
  EXPECT_EQ(tier.recency_order, RecencyOrder::kFirstBlockMostRecent);
}

TEST(TierPolicyKeys, PolicyMapSetsTheThreshold) {
  TierSpec tier = parse(
      "{medium: hbm, capacity_blocks: 10, kv: bf16, policy: {name: s3fifo, move_to_main_threshold: 1}}")[0];
  EXPECT_EQ(tier.policy, PolicyKind::kS3Fifo);
  EXPECT_EQ(tier.policy_options.move_to_main_threshold, 1);
  EXPECT_EQ(parse("{medium: hbm, capacity_blocks: 10, kv: bf16, policy: {name: arc}}")[0].policy,
            PolicyKind::kArc);
}

TEST(TierPolicyKeys, RecencyOrderTakesEitherEnd) {
  TierSpec tier =
      parse("{medium: hbm, capacity_blocks: 10, kv: bf16, recency_order: last_block_most_recent}")[0];
  EXPECT_EQ(tier.recency_order, RecencyOrder::kLastBlockMostRecent);
}

TEST(TierPolicyKeys, ErrorsNameTheKey) {
  EXPECT_EQ(
      error_of(
          "{medium: hbm, capacity_blocks: 10, kv: bf16, policy: {name: s3fifo, move_to_main_threshold: 4}}"),
      "tiers.yaml:2:97: tiers[0].policy.move_to_main_threshold: expected 1, 2 or 3 references (frequencies "
      "are capped at 3)");
  EXPECT_NE(
      error_of("{medium: hbm, capacity_blocks: 10, kv: bf16, policy: {name: lru, move_to_main_threshold: 1}}")
          .find("tiers[0].policy.move_to_main_threshold: applies to policy s3fifo only"),
      std::string::npos);
  EXPECT_NE(error_of("{medium: hbm, capacity_blocks: 10, kv: bf16, policy: {name: s3fifo, threshold: 1}}")
                .find("tiers[0].policy.threshold: unknown key 'threshold'"),
            std::string::npos);
  EXPECT_NE(
      error_of("{medium: hbm, capacity_blocks: 10, kv: bf16, recency_order: reversed}")
          .find("tiers[0].recency_order: expected first_block_most_recent or last_block_most_recent, got "
                "'reversed'"),
      std::string::npos);
}

}  // namespace
}  // namespace kvtier
