#include "sim/core/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>

#include "sim/core/attention_cost.h"
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
  // Measured on the H200 with a Llama-3.1-8B-shaped model with PyTorch SDPA (docs/cost-model.md): 33.9K tok/s
  // at 4K, 11.2K at 128K.
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

// The step costs a calibration's `serving` part holds, set by hand for the tests below.
StepCosts hand_step_costs() {
  return {.step_overhead_s = 1e-3,
          .linear_mfu = 0.6,
          .attention_mfu = 0.4,
          .attention_half_rate_keys = 1000,
          .attention_bandwidth_efficiency = 0.8};
}

TEST(CostModel, StepWorkWithoutStepCostsIsTheSummedRoofline) {
  // The scheduler summed each chunk's FLOPs and KV bytes, then the decodes', and took the roofline: a
  // StepWork must give the very same double.
  ModelCard m = card("llama-3.1-8b");
  CostModel cost(m, hardware("h200"), 131072);
  StepWork work;
  work.add_prefill(3000, 1024);
  work.add_prefill(0, 517);
  for (int i = 0; i < 37; ++i) work.add_decode(9000);
  double flops = cost.prefill_flops(3000, 1024) + cost.prefill_flops(0, 517);
  double kv_bytes = 131072.0 * 4024 + 131072.0 * 517;
  flops += cost.decode_flops(37, 37 * 9000);
  kv_bytes += 131072.0 * 37 * 9000;
  EXPECT_EQ(work.tokens(), 1024 + 517 + 37);
  EXPECT_EQ(cost.step_seconds(work), cost.step_seconds(flops, kv_bytes, 1024 + 517 + 37));
  EXPECT_EQ(cost.step_seconds(StepWork{}), 0);
}

TEST(CostModel, ServingTermsPriceAPrefillByHand) {
  ModelCard m = card("llama-3.1-8b");
  CostModel cost(m, hardware("h200"), 131072, hand_step_costs());
  // 4,096 tokens after 4,096 cached. Linear: 2 × 8.03e9 × 4096 FLOPs at 0.6 × 989 TFLOP/s (the weights,
  // 16.06 GB at 4.2 TB/s, take less). Attention: pairs 4096 × 4096 + 4096 × 4097 / 2, 2 × 32 × 256 × 32
  // FLOPs each, at 0.4 × 989 TFLOP/s × 8192 / (8192 + 1000).
  double linear = 2 * 8.03e9 * 4096 / (0.6 * 989e12);
  double pairs = 4096.0 * 4096 + 4096.0 * 4097 / 2;
  double attention = pairs * 2 * 32 * 256 * 32 / (0.4 * 989e12 * 8192 / 9192);
  EXPECT_NEAR(cost.prefill_seconds(4096, 4096), 1e-3 + linear + attention, 1e-12);
  StepWork with_empty_chunk;
  with_empty_chunk.add_prefill(0, 0);
  with_empty_chunk.add_prefill(4096, 4096);
  EXPECT_NEAR(cost.step_seconds(with_empty_chunk), 1e-3 + linear + attention, 1e-12)
      << "an empty chunk adds nothing";
  // A short chunk fills few blocks of the GPU: with half-rate queries of 2,048, the 4,096 new tokens run
  // attention at 0.4 × 989 TFLOP/s / (1 + 1000 / 8192 + 2048 / 4096).
  StepCosts by_queries = hand_step_costs();
  by_queries.attention_half_rate_queries = 2048;
  const CostModel queries(m, hardware("h200"), 131072, by_queries);
  const double slower = pairs * 2 * 32 * 256 * 32 * (1 + 1000.0 / 8192 + 2048.0 / 4096) / (0.4 * 989e12);
  EXPECT_NEAR(queries.prefill_seconds(4096, 4096), 1e-3 + linear + slower, 1e-12);
}

TEST(CostModel, ServingTermsPriceADecodeBatchByHand) {
  ModelCard m = card("llama-3.1-8b");
  CostModel cost(m, hardware("h200"), 131072, hand_step_costs());
  // 8 sequences of 8K: the weights (16.06 GB at 0.875 × 4.8 TB/s) outlast 2 × 8.03e9 × 8 FLOPs; the KV,
  // 8 × 8192 × 131072 bytes, streams at 0.8 × 4.8 TB/s; decode attention's FLOPs are in that rate.
  double weights = 8.03e9 * 2 / (0.875 * 4.8e12);
  double kv = 8.0 * 8192 * 131072 / (0.8 * 4.8e12);
  EXPECT_NEAR(cost.decode_step_seconds(8, 8 * 8192), 1e-3 + weights + kv, 1e-12);
}

TEST(CostModel, ServingAttentionRateRisesWithKeysToItsPeak) {
  ModelCard m = card("llama-3.1-8b");
  HardwareConfig h200 = hardware("h200");
  CostModel cost(m, h200, 131072, hand_step_costs());
  StepCosts free_attention = hand_step_costs();
  free_attention.attention_mfu = 1e12;
  CostModel no_attention(m, h200, 131072, free_attention);
  // A chunk's attention time is its FLOPs over 0.4 × peak × keys / (keys + 1000): at 1,000 keys half
  // the peak rate, at 1M keys within 0.1 % of it.
  auto attention_rate = [&](int64_t cached, int64_t fresh) {
    return (cost.prefill_flops(cached, fresh) - 2 * 8.03e9 * static_cast<double>(fresh)) /
           (cost.prefill_seconds(cached, fresh) - no_attention.prefill_seconds(cached, fresh));
  };
  EXPECT_NEAR(attention_rate(488, 512) / (0.4 * 989e12), 0.5, 1e-6);
  EXPECT_NEAR(attention_rate(1 << 20, 512) / (0.4 * 989e12), 1.0, 1e-3);
}

TEST(CostModel, StepCostsMustBePositiveRates) {
  ModelCard m = card("llama-3.1-8b");
  StepCosts zero_mfu = hand_step_costs();
  zero_mfu.linear_mfu = 0;
  StepCosts negative_overhead = hand_step_costs();
  negative_overhead.step_overhead_s = -1e-3;
  for (const StepCosts& costs : {zero_mfu, negative_overhead})
    EXPECT_THROW(CostModel(m, hardware("h200"), 131072, costs), std::invalid_argument);
}

// Attention priced from the kernel's blocks: an H200-like tiling with costs chosen for the arithmetic.
StepCosts block_step_costs() {
  AttentionCosts attention{
      .query_rows = 128,
      .multiprocessors = 132,
      .unsplit = {.key_tile = 128, .slots = 132, .launch_s = 5e-6, .block_s = 1e-6, .key_tile_s = 2e-6},
      .split = {.key_tile = 64, .slots = 132, .launch_s = 7e-6, .block_s = 1e-6, .key_tile_s = 3e-6}};
  return {.step_overhead_s = 1e-3, .linear_mfu = 0.6, .attention = attention};
}

TEST(StepWork, AddDecodeRecordsEachContextAndKeepsTheSums) {
  StepWork work;
  work.add_decode(100);
  work.add_decode(7);
  EXPECT_EQ(work.decodes, 2);
  EXPECT_EQ(work.decode_context, 107);
  EXPECT_EQ(work.decode_contexts, (std::vector<int64_t>{100, 7}));
}

TEST(CostModel, BlockAttentionPricesADecodeBatchByHand) {
  ModelCard m = card("llama-3.1-8b");
  CostModel cost(m, hardware("h200"), 131072, block_step_costs());
  // 8 decodes after 32,768 tokens, 8 KV heads, ratio 4: 5 splits, three waves of 103 key tiles of the
  // split kernel per layer (attention_cost_test.cpp derives it), 32 layers. The weights (16.06 GB at
  // 0.875 × 4.8 TB/s) outlast the linear FLOPs; no KV-bandwidth term: the blocks price the decodes.
  const double weights = 8.03e9 * 2 / (0.875 * 4.8e12);
  const double expected = 1e-3 + weights + 32 * (7e-6 + 3 * (1e-6 + 103 * 3e-6));
  StepWork work;
  for (int i = 0; i < 8; ++i) work.add_decode(32768);
  EXPECT_NEAR(cost.step_seconds(work), expected, 1e-12);
  EXPECT_NEAR(cost.decode_step_seconds(8, 8 * 32768), expected, 1e-12) << "the context spread evenly";
}

TEST(CostModel, BlockAttentionPricesAChunkBesideADecodeByHand) {
  ModelCard m = card("llama-3.1-8b");
  CostModel cost(m, hardware("h200"), 131072, block_step_costs());
  // A 64-token chunk (2 query tiles of 32 tokens) and a decode after 100: 2 tiles × 8 heads × 2 sequences
  // = 32 blocks < 264, but 101 keys allow no split. 24 blocks do work, each 1 key tile of 128: one wave
  // of 1e-6 + 2e-6 s after the 5e-6 s launch, per layer.
  const double weights = 8.03e9 * 2 / (0.875 * 4.8e12);
  StepWork work;
  work.add_prefill(0, 64);
  work.add_decode(100);
  EXPECT_NEAR(cost.step_seconds(work), 1e-3 + weights + 32 * (5e-6 + 1e-6 + 2e-6), 1e-12);
}

// kvtier-hw serve's StepRunner hands the forward pass the decodes first, then the chunks.
TEST(CostModel, BlockAttentionLaunchesDecodesThenChunks) {
  ModelCard m = card("llama-3.1-8b");
  StepCosts costs = block_step_costs();
  costs.attention->multiprocessors = 1;
  costs.attention->unsplit.slots = 3;
  CostModel cost(m, hardware("h200"), 131072, costs);
  StepWork work;
  work.add_decode(0);
  work.add_prefill(1280, 64);
  const std::vector<AttentionSequence> chunk_first{{1280, 64}, {0, 1}}, decode_first{{0, 1}, {1280, 64}};
  const double in_order = attention_launch_seconds(*costs.attention, 8, 4, decode_first);
  ASSERT_NE(in_order, attention_launch_seconds(*costs.attention, 8, 4, chunk_first));
  const double weights = 8.03e9 * 2 / (0.875 * 4.8e12);
  EXPECT_NEAR(cost.step_seconds(work), 1e-3 + weights + 32 * in_order, 1e-12);
}

TEST(CostModel, BlockAttentionNeedsEachDecodesContext) {
  CostModel cost(card("llama-3.1-8b"), hardware("h200"), 131072, block_step_costs());
  StepWork work;  // two decodes by their sums alone, as a caller filling the fields might leave them
  work.decodes = 2;
  work.decode_context = 200;
  EXPECT_THROW(cost.step_seconds(work), std::invalid_argument);
}

TEST(CostModel, BlockAttentionCostsAreChecked) {
  ModelCard m = card("llama-3.1-8b");
  StepCosts no_slots = block_step_costs();
  no_slots.attention->split.slots = 0;
  StepCosts negative_tile = block_step_costs();
  negative_tile.attention->unsplit.key_tile_s = -1e-6;
  for (const StepCosts& costs : {no_slots, negative_tile})
    EXPECT_THROW(CostModel(m, hardware("h200"), 131072, costs), std::invalid_argument);
  try {
    CostModel(card("deepseek-v3"), hardware("h200"), 131072, block_step_costs());
    ADD_FAILURE() << "an MLA card priced by the GQA kernel's blocks";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("DeepSeek-V3"), std::string::npos) << e.what();
  }
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

// Four drives of 7 GB/s and 200K IOPS each, 8 MiB I/Os: 200,000 x 8,388,608 B = 1.68 TB/s per drive, so
// the bandwidth binds (28 GB/s); at 64 KiB I/Os the IOPS bind: 4 x 200,000 x 65,536 B = 52.43 GB/s > 28,
// still the bandwidth; at 16 KiB, 4 x 200,000 x 16,384 B = 13.11 GB/s. A store spending 0.1 s of CPU per GB
// read on its four threads (one per drive) checksums 40 GB/s; at 0.2 s per GB, 20 GB/s binds below 28.
TEST(Hardware, NvmeRatesAreTheDrivesBandwidthIopsOrTheStoresChecksumWhicheverBinds) {
  const std::string base = R"(name: n
gpu: {model: g, hbm_capacity: 80GB, hbm_bandwidth: 3TB/s, bf16_dense: 1PFLOPS}
host: {dram_capacity: 1TB, dram_bandwidth: 400GB/s}
pcie: {h2d_bandwidth: 55GB/s, d2h_bandwidth: 55GB/s}
nvme: {drives: 4, capacity: 4TB, read_bandwidth: 7GB/s, write_bandwidth: 5GB/s, read_iops: 200000)";
  auto nvme = [&](const std::string& more) {
    return parse_hardware(ConfigNode::load_string(base + more + "}\n", "n.yaml")).nvme;
  };
  EXPECT_DOUBLE_EQ(nvme("").node_read_bandwidth(), 28e9);
  EXPECT_DOUBLE_EQ(nvme("").node_write_bandwidth(), 20e9) << "no write IOPS given: no limit";
  EXPECT_DOUBLE_EQ(nvme(", io_size: 64KiB").node_read_bandwidth(), 28e9);
  EXPECT_DOUBLE_EQ(nvme(", io_size: 16KiB").node_read_bandwidth(), 4 * 200000 * 16384.0);
  EXPECT_DOUBLE_EQ(nvme(", store_read_cpu_per_gb: 100ms").node_read_bandwidth(), 28e9);
  EXPECT_DOUBLE_EQ(nvme(", store_read_cpu_per_gb: 200ms").node_read_bandwidth(), 20e9);
  EXPECT_DOUBLE_EQ(nvme(", store_read_cpu_per_gb: 200ms, gpudirect: true").node_read_bandwidth(), 28e9)
      << "GPUDirect paths carry no checksum";
  EXPECT_DOUBLE_EQ(nvme(", store_write_cpu_per_gb: 1s").node_write_bandwidth(), 4e9);
  try {
    std::string negative = base;
    negative.replace(negative.find("200000"), 6, "-1");
    parse_hardware(ConfigNode::load_string(negative + "}\n", "n.yaml"));
    ADD_FAILURE() << "negative IOPS accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("nvme.read_iops"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvtier
