// Tier configuration: sizes from layouts, defaults, and errors that name the file, line and key.
#include "sim/cache/tier_spec.h"

#include <gtest/gtest.h>

#include "sim/core/config_files.h"

namespace kvtier {
namespace {

ModelCard llama70b() {
  return parse_model_card(load_config("llama-3.1-70b", "models"));
}

std::vector<TierSpec> parse(const std::string& yaml) {
  ConfigNode root = ConfigNode::load_string(yaml, "tiers.yaml");
  return parse_tiers(root.child("tiers"), llama70b(), 512);
}

HardwareConfig h200() {
  return parse_hardware(load_config("h200", "configs/hardware"));
}

std::string error_of(const std::string& yaml, const HardwareConfig* hardware = nullptr) {
  try {
    ConfigNode root = ConfigNode::load_string(yaml, "tiers.yaml");
    parse_tiers(root.child("tiers"), llama70b(), 512, std::nullopt, hardware);
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
  - {medium: hbm, capacity: 40GiB, kv: bf16}
  - {medium: dram, capacity: 512GiB, kv: turboquant4, policy: s3fifo, placement: exclusive, admit_after: 2}
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
  - {medium: hbm, capacity_tokens: 100000, kv: fp8}
  - {medium: dram, capacity_blocks: 300, kv: {encoding: int4}, write: through}
)");
  EXPECT_EQ(tiers[0].capacity_blocks(), 195);  // 100,000 / 512
  EXPECT_EQ(tiers[1].capacity_blocks(), 300);
  EXPECT_EQ(tiers[1].write, WriteMode::kThrough);
  auto suffixed = parse("tiers:\n  - {medium: hbm, capacity_tokens: 1M, kv: fp8}\n"
                        "  - {medium: dram, capacity_blocks: 2K, kv: bf16}\n");
  EXPECT_EQ(suffixed[0].capacity_blocks(), 2048);  // 1,048,576 / 512
  EXPECT_EQ(suffixed[1].capacity_blocks(), 2048);
}

TEST(ParseTiers, UnknownKeyIsLocatedWithSuggestion) {
  std::string error = error_of("tiers:\n  - {medium: hbm, capacity: 1GiB, kv: bf16, polcy: lru}\n");
  EXPECT_NE(error.find("tiers.yaml:2"), std::string::npos) << error;
  EXPECT_NE(error.find("policy"), std::string::npos) << error;
}

TEST(ParseTiers, RejectsContradictionsAndBadValues) {
  EXPECT_NE(error_of("tiers:\n  - {medium: hbm, capacity: 1GiB, kv: bf16, policy: lruu}\n")
                .find("did you mean 'lru'"),
            std::string::npos);
  EXPECT_NE(error_of("tiers:\n  - {medium: hbm, capacity: 1GiB, kv: bf16, placement: exclusive}\n")
                .find("applies to lower tiers only"),
            std::string::npos);
  EXPECT_NE(error_of("tiers:\n  - {medium: hbm, capacity: 1GiB, kv: bf16}\n"
                     "  - {medium: dram, capacity: 1GiB, kv: bf16, placement: exclusive, write: through}\n")
                .find("needs placement: inclusive"),
            std::string::npos);
  EXPECT_NE(error_of("tiers:\n  - {medium: hbm, kv: bf16}\n").find("exactly one of capacity"), std::string::npos);
  EXPECT_NE(error_of("tiers:\n  - {medium: hbm, capacity: 12, kv: bf16}\n").find("tiers.yaml:2"),
            std::string::npos);
  EXPECT_NE(
      error_of("tiers:\n  - {medium: hbm, name: a, capacity: 1GiB, kv: bf16}\n  - {medium: dram, name: a, capacity: 1GiB, kv: bf16}\n")
          .find("unique"),
      std::string::npos);
  EXPECT_NE(error_of("tiers: []\n").find("at least one tier"), std::string::npos);
}

TEST(ParseTiers, EachTierSaysItsMediumAndIsNamedAfterItUnlessLabelled) {
  auto tiers = parse(R"(
tiers:
  - {medium: hbm, capacity: 40GiB, kv: bf16}
  - {medium: dram, name: host-pool, capacity: 512GiB, kv: bf16}
  - {medium: nvme, capacity: 1TiB, kv: bf16}
)");
  ASSERT_EQ(tiers.size(), 3u);
  EXPECT_EQ(tiers[0].medium, Medium::kHbm);
  EXPECT_EQ(tiers[0].name, "hbm");
  EXPECT_EQ(tiers[1].medium, Medium::kDram);
  EXPECT_EQ(tiers[1].name, "host-pool");
  EXPECT_EQ(tiers[2].medium, Medium::kNvme);
  EXPECT_EQ(tiers[2].name, "nvme");
}

TEST(ParseTiers, ATierWithoutMediumIsAnErrorAtItsLine) {
  EXPECT_EQ(error_of("tiers:\n  - {medium: hbm, capacity: 1GiB, kv: bf16}\n  - {name: dram, capacity: 1GiB, kv: bf16}\n"),
            "tiers.yaml:3:5: tiers[1]: missing required key 'medium': where the tier's KV lives (hbm, dram, nvme or "
            "remote)");
}

TEST(ParseTiers, TierZeroIsHbmAndOnlyTierZero) {
  EXPECT_EQ(error_of("tiers:\n  - {medium: dram, capacity: 1GiB, kv: bf16}\n"),
            "tiers.yaml:2:14: tiers[0].medium: tier 0 holds running requests, so its medium is hbm");
  EXPECT_EQ(error_of("tiers:\n  - {medium: hbm, capacity: 1GiB, kv: bf16}\n  - {medium: hbm, capacity: 1GiB, kv: bf16}\n"),
            "tiers.yaml:3:14: tiers[1].medium: a lower tier is dram, nvme or remote; hbm is tier 0's");
  EXPECT_EQ(error_of("tiers:\n  - {medium: hbm, capacity: 1GiB, kv: bf16}\n  - {medium: ssd, capacity: 1GiB, kv: bf16}\n"),
            "tiers.yaml:3:14: tiers[1].medium: expected hbm, dram, nvme or remote, got 'ssd'");
}

TEST(ParseTiers, TwoTiersOnOneMediumAreRefusedAtTheSecond) {
  EXPECT_EQ(error_of("tiers:\n  - {medium: hbm, capacity: 1GiB, kv: bf16}\n"
                     "  - {medium: dram, capacity: 1GiB, kv: bf16}\n"
                     "  - {medium: dram, name: dram2, capacity: 1GiB, kv: int4}\n"),
            "tiers.yaml:4:14: tiers[2].medium: tiers[1] is already the dram tier; the hardware has one dram, so "
            "one tier per medium");
}

TEST(ParseTiers, AMediumTheHardwareLacksIsRefusedAtItsKey) {
  HardwareConfig hardware = h200();  // one NVMe drive, no network
  const std::string remote = "tiers:\n  - {medium: hbm, capacity: 1GiB, kv: bf16}\n"
                             "  - {medium: remote, capacity: 1GiB, kv: bf16}\n";
  EXPECT_EQ(error_of(remote), "no error");  // without hardware (the hit-rate mode) any medium is a place
  EXPECT_EQ(error_of(remote, &hardware),
            "tiers.yaml:3:14: tiers[1].medium: the hardware file 'H200 (kvtier calibration machine)' has no "
            "network (network.bandwidth), so there is no remote tier");
  hardware.nvme.drives = 0;
  EXPECT_EQ(error_of("tiers:\n  - {medium: hbm, capacity: 1GiB, kv: bf16}\n"
                     "  - {medium: nvme, capacity: 1GiB, kv: bf16}\n",
                     &hardware),
            "tiers.yaml:3:14: tiers[1].medium: the hardware file 'H200 (kvtier calibration machine)' has no NVMe "
            "drives (nvme.drives), so there is no nvme tier");
}

// The load path of a tier is the hardware's path from its medium: the H200's DRAM over one PCIe link
// (55.2 GB/s, below the 101 GB/s of DRAM) and its one 1.1 GB/s drive.
TEST(ParseTiers, EachLowerTierCarriesItsLoadPathOnTheHardware) {
  const HardwareConfig hardware = h200();
  ConfigNode root = ConfigNode::load_string(
      "tiers:\n  - {medium: hbm, capacity: 1GiB, kv: bf16}\n  - {medium: dram, capacity: 1GiB, kv: bf16}\n"
      "  - {medium: nvme, capacity: 1GiB, kv: bf16}\n",
      "tiers.yaml");
  auto tiers = parse_tiers(root.child("tiers"), llama70b(), 512, std::nullopt, &hardware);
  EXPECT_FALSE(tiers[0].load_path.has_value());
  ASSERT_TRUE(tiers[1].load_path.has_value());
  EXPECT_EQ(tiers[1].load_path->source, Medium::kDram);
  EXPECT_DOUBLE_EQ(tiers[1].load_path->bandwidth, 55.2e9);
  ASSERT_TRUE(tiers[2].load_path.has_value());
  EXPECT_EQ(tiers[2].load_path->source, Medium::kNvme);
  EXPECT_DOUBLE_EQ(tiers[2].load_path->bandwidth, 1.1e9);
  EXPECT_FALSE(parse(R"(
tiers:
  - {medium: hbm, capacity: 1GiB, kv: bf16}
  - {medium: dram, capacity: 1GiB, kv: bf16}
)")[1].load_path.has_value());
}

}  // namespace
}  // namespace kvtier
