#include "sim/core/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>

#include "sim/core/breakeven.h"
#include "sim/core/config_files.h"

namespace kvtier {
namespace {

ModelCard card(const std::string& name) {
  return parse_model_card(load_config(name, "models"));
}
HardwareConfig hardware(const std::string& name) {
  return parse_hardware(load_config(name, "configs/hardware"));
}

TEST(CostModel, PrefillFlopsByHand) {
  ModelCard m = card("llama-3.1-8b");
  CostModel cost(m, hardware("h200"), 131072);
  // 4 tokens after 10 cached: linear 2 × 8.03e9 × 4; attention pairs 11 + 12 + 13 + 14 = 50, each
  // 2 × 32 heads × (128 + 128) × 32 layers FLOPs.
  double expected = 2 * 8.03e9 * 4 + 50.0 * 2 * 32 * 256 * 32;
  EXPECT_DOUBLE_EQ(cost.prefill_flops(10, 4), expected);
}

TEST(CostModel, FixedRateBreakEvenIs590GBpsForLlama70B) {
  // 327,680 B/token × 18,000 tokens/s: the NVMe seed's setup with the right bytes per token.
  ModelCard m = card("llama-3.1-70b");
  CostModel cost = CostModel::fixed_prefill_rate(m, 18000, 327680);
  BreakevenPoint p = breakeven_at(cost, m.layers, 327680, 32768, 1024, {});
  EXPECT_NEAR(p.breakeven_bandwidth / 1e9, 5.898, 0.001);
  EXPECT_LT(p.breakeven_overlapped, p.breakeven_bandwidth);
}

TEST(CostModel, H200PrefillRateTracksTheMeasuredOne) {
  // Measured on the H200 with a Llama-3.1-8B-shaped model (facts.md): 33.9K tok/s at 4K, 11.2K at 128K.
  CostModel cost(card("llama-3.1-8b"), hardware("h200"), 131072);
  EXPECT_NEAR(cost.prefill_tokens_per_s(4096) / 33.9e3, 1.0, 0.05);
  EXPECT_NEAR(cost.prefill_tokens_per_s(131072) / 11.2e3, 1.0, 0.05);
}

TEST(CostModel, H200DiskLosesForBf16AndWinsFor4Bit) {
  ModelCard m = card("llama-3.1-8b");
  HardwareConfig h200 = hardware("h200");
  std::vector<LoadPath> paths = load_paths(h200);
  ASSERT_EQ(paths.size(), 2u);
  ASSERT_EQ(paths[1].name, "NVMe via DRAM");
  for (const char* preset : {"bf16", "turboquant4-all"}) {
    double bpt = static_cast<double>(resolve_kv_layout(m, preset).bytes_per_token());
    CostModel cost(m, h200, bpt);
    BreakevenPoint p = breakeven_at(cost, m.layers, bpt, 65536, 1024, paths);
    bool disk_wins = p.paths[1].speedup > 1;
    EXPECT_EQ(disk_wins, std::string(preset) != "bf16") << preset;
    EXPECT_GT(p.paths[0].speedup, 10) << "DRAM over PCIe should beat recompute by far";
  }
}

TEST(CostModel, DecodeIsMemoryBound) {
  ModelCard m = card("llama-3.1-70b");
  HardwareConfig h200 = hardware("h200");
  CostModel cost(m, h200, 327680);
  // One sequence of 32K tokens: weights (141.2 GB) plus 32K × 320 KiB of KV over 4.2 TB/s.
  double bytes = 70.6e9 * 2 + 327680.0 * 32768;
  EXPECT_NEAR(cost.decode_step_seconds(1, 32768), bytes / (4.8e12 * 0.875), 1e-9);
}

TEST(CostModel, FixedRateMustBePositiveAndFinite) {
  // A NaN rate used to turn every prefill time into NaN and every break-even bandwidth into -nan.
  ModelCard m = card("llama-3.1-8b");
  for (double rate : {std::nan(""), double{INFINITY}, 0.0, -5.0}) {
    EXPECT_THROW(CostModel::fixed_prefill_rate(m, rate, 131072), ConfigError) << rate;
  }
  // 131,072 B/token × 4,096 tokens over 4,096 / 1,000 s recomputing (the new tokens cancel out).
  CostModel cost = CostModel::fixed_prefill_rate(m, 1000, 131072);
  EXPECT_DOUBLE_EQ(breakeven_at(cost, m.layers, 131072, 4096, 1024, {}).breakeven_bandwidth, 131072 * 1000.0);
}

TEST(CostModel, TurnTokensThatOverflowAreAnError) {
  ModelCard m = card("llama-3.1-8b");
  CostModel cost = CostModel::fixed_prefill_rate(m, 1000, 131072);
  EXPECT_THROW(breakeven_at(cost, m.layers, 131072, 4096, INT64_MAX, {}), ConfigError);
  // Far above any real turn, yet no overflow: prefill of 2^62 tokens at 1,000 tokens/s.
  EXPECT_DOUBLE_EQ(cost.prefill_seconds(int64_t{1} << 61, int64_t{1} << 61), 0x1p61 / 1000);
}

// Before, the count was cast to int: 2^32 + 1 GPUs became one.
TEST(Hardware, DeviceCountsBeyondTheirLimitAreErrors) {
  std::ifstream file("configs/hardware/h200.yaml");
  std::string h200(std::istreambuf_iterator<char>(file), {});
  auto error_with = [&](const std::string& from, const std::string& to) -> std::string {
    std::string text = h200;
    size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    try {
      parse_hardware(ConfigNode::load_string(text, "h200.yaml"));
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(error_with("count: 1", "count: 4294967297").find("gpu.count: expected at most 65536 GPUs"),
            std::string::npos);
  EXPECT_NE(error_with("drives: 1", "drives: 4294967297").find("nvme.drives: expected at most 65536 drives"),
            std::string::npos);
}

}  // namespace
}  // namespace kvtier
