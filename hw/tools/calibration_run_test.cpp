#include "hw/tools/calibration_run.h"

#include <gtest/gtest.h>

#include "hw/model/card_shape.h"
#include "hw/tools/link_fit.h"
#include "sim/core/config_files.h"
#include "sim/core/model_card.h"

namespace kvtier::hw {
namespace {

HardwareConfig h200() {
  HardwareConfig hardware;
  hardware.name = "test H200";
  hardware.gpu.bf16_flops = 989e12;
  hardware.gpu.hbm_bandwidth = 4.8e12;
  return hardware;
}

// Copies that follow latency + bytes / bandwidth exactly.
std::vector<CopySample> exact_copies(CopyDirection direction, double latency, double bandwidth) {
  std::vector<CopySample> copies;
  for (uint64_t bytes = 4096; bytes <= (64u << 20); bytes *= 4) {
    const double seconds = latency + bytes / bandwidth;
    copies.push_back({direction, bytes, seconds, bytes / seconds});
  }
  return copies;
}

TEST(CalibrationJson, FitsPcieLatencyPerDirectionAndReportsTheLargestCopysRateInHardwareFileUnits) {
  CalibrationRun run{.command = "kvtier-hw calibrate", .device = "test", .reference = h200()};
  run.copies = exact_copies(CopyDirection::kHostToDevice, 2.0e-6, 55e9);
  const auto d2h = exact_copies(CopyDirection::kDeviceToHost, 3.0e-6, 56e9);
  run.copies.insert(run.copies.end(), d2h.begin(), d2h.end());
  const MeasuredHardware hardware = summarize_calibration(run).hardware;
  // The 64 MiB copy: 67108864 B / (2 us + 1220.16 us) = 54.91 GB/s; / (3 us + 1198.37 us) = 55.86 GB/s.
  EXPECT_NEAR(*hardware.pcie_h2d_bandwidth, 54.91e9, 0.006e9);
  EXPECT_NEAR(*hardware.pcie_d2h_bandwidth, 55.86e9, 0.006e9);
  // Each direction's fitted latency.
  EXPECT_NEAR(*hardware.pcie_h2d_latency, 2.0e-6, 0.001e-6);
  EXPECT_NEAR(*hardware.pcie_d2h_latency, 3.0e-6, 0.001e-6);
  EXPECT_FALSE(hardware.nvme_read_bandwidth) << "no disk samples, no nvme values";
  const nlohmann::json pcie = nlohmann::json(summarize_calibration(run))["hardware"]["pcie"];
  EXPECT_EQ(pcie["h2d_latency"], "2.00us");
  EXPECT_FALSE(pcie.contains("latency")) << "no shared latency beside the two";
}

TEST(CalibrationJson, TakesThePcieValuesFromTheStoresOffloadBatchesOverThePlainCopies) {
  CalibrationRun run{.command = "c", .device = "d", .reference = h200()};
  run.copies = exact_copies(CopyDirection::kHostToDevice, 2.0e-6, 55e9);
  const auto d2h = exact_copies(CopyDirection::kDeviceToHost, 3.0e-6, 56e9);
  run.copies.insert(run.copies.end(), d2h.begin(), d2h.end());
  // Offloads of 32 MiB pages at 110 us + bytes / 54.9 GB/s, reloads at 37 us + bytes / 54.8 GB/s.
  const uint64_t page = 32u << 20;
  for (uint64_t pages : {1u, 2u, 32u}) {
    const double bytes = static_cast<double>(pages * page);
    run.offloads.push_back({CopyDirection::kDeviceToHost, page, pages, 110e-6 + bytes / 54.9e9});
    run.offloads.push_back({CopyDirection::kHostToDevice, page, pages, 37e-6 + bytes / 54.8e9});
  }
  const MeasuredHardware hardware = summarize_calibration(run).hardware;
  // 1 GiB in 110 us + 19.558 ms: 54.593 GB/s; in 37 us + 19.594 ms: 54.697 GB/s.
  EXPECT_NEAR(*hardware.pcie_d2h_bandwidth, 54.593e9, 0.001e9);
  EXPECT_NEAR(*hardware.pcie_h2d_bandwidth, 54.697e9, 0.001e9);
  EXPECT_NEAR(*hardware.pcie_d2h_latency, 110e-6, 0.001e-6) << "the batch's, not the plain copy's 3 us";
  EXPECT_NEAR(*hardware.pcie_h2d_latency, 37e-6, 0.001e-6);
  const nlohmann::json offloads = nlohmann::json(summarize_calibration(run))["measurements"]["offload"];
  ASSERT_EQ(offloads.size(), 6u);
  EXPECT_EQ(offloads[1]["direction"], "h2d");
  EXPECT_EQ(offloads[5]["pages"], 32);
}

TEST(CalibrationJson, DerivesMfuFromGemmFlopsAndHbmEfficiencyFromTheDeviceCopy) {
  CalibrationRun run{.command = "c", .device = "d", .reference = h200()};
  // 2 x 4096 x 4096 x 4096 FLOP in 0.25 ms = 549.8 TFLOP/s, 0.5559 of 989 TFLOP/s.
  run.gemms.push_back({"m", {"o", 4096, 4096, 4096}, 0.25e-3});
  run.copies.push_back({CopyDirection::kDeviceToDevice, 1u << 30, 0, 4.2e12});
  const MeasuredHardware hardware = summarize_calibration(run).hardware;
  EXPECT_NEAR(*hardware.prefill_mfu, 2.0 * 4096 * 4096 * 4096 / 0.25e-3 / 989e12, 1e-12);
  EXPECT_NEAR(*hardware.memory_bandwidth_efficiency, 0.875, 1e-12);
}

TEST(CalibrationJson, TakesTheBestDiskRatesAndFitsLatencyFromSingleReads) {
  CalibrationRun run{.command = "c", .device = "d", .reference = h200()};
  // One read in flight at 20 us + block / 1.1 GB/s, 64 I/Os per sample; faster with more in flight.
  for (uint64_t block : {4096u, 65536u, 1u << 20}) {
    const double per_io = 20e-6 + block / 1.1e9;
    run.disk.push_back({DiskOp::kRead, block, 1, 64 * block, 64 * per_io});
    run.disk.push_back({DiskOp::kWrite, block, 1, 64 * block, 64 * block / 1.6e9});
  }
  run.disk.push_back({DiskOp::kRead, 4u << 20, 8, 1u << 30, (1u << 30) / 1.3e9});
  const MeasuredHardware hardware = summarize_calibration(run).hardware;
  EXPECT_NEAR(*hardware.nvme_read_bandwidth, 1.3e9, 1e3);
  EXPECT_NEAR(*hardware.nvme_write_bandwidth, 1.6e9, 1e3);
  EXPECT_NEAR(*hardware.nvme_latency, 20e-6, 0.001e-6);
}

TEST(CalibrationJson, TakesTheNvmeValuesFromTheStoresBatchesOverTheRawGrid) {
  CalibrationRun run{.command = "c", .device = "d", .reference = h200()};
  run.disk.push_back({DiskOp::kRead, 4u << 20, 8, 1u << 30, (1u << 30) / 2.2e9});
  run.disk.push_back({DiskOp::kWrite, 4u << 20, 8, 1u << 30, (1u << 30) / 2.6e9});
  // The store: gets at 150 us + bytes / 1.6 GB/s, puts at 90 us + bytes / 2.4 GB/s; 0.08 s of CPU per GB read
  // and 0.05 s per GB written. The largest batch of 8 MiB blocks reads at 1.6 GB/s (the line's slope, plus
  // 150 us), and a 1 MiB-block batch as large reads at 1.2 GB/s: the bandwidth is the two together.
  const uint64_t block = 8u << 20;
  for (uint64_t blocks : {1u, 8u, 32u}) {
    const double bytes = static_cast<double>(blocks * block);
    run.store.push_back({DiskOp::kWrite, block, blocks, 90e-6 + bytes / 2.4e9, bytes * 0.05e-9});
    run.store.push_back({DiskOp::kRead, block, blocks, 150e-6 + bytes / 1.6e9, bytes * 0.08e-9});
  }
  const double big = 256.0 * (1 << 20);
  run.store.push_back(
      {DiskOp::kWrite, 1u << 20, 128, big / 2 / 2.4e9, big / 2 * 0.05e-9});  // a smaller batch
  run.store.push_back({DiskOp::kWrite, 1u << 20, 256, big / 2.4e9, big * 0.05e-9});
  run.store.push_back({DiskOp::kRead, 1u << 20, 256, big / 1.2e9, big * 0.08e-9});
  const double largest_read_s = 150e-6 + big / 1.6e9 + big / 1.2e9;
  const MeasuredHardware hardware = summarize_calibration(run).hardware;
  EXPECT_NEAR(*hardware.nvme_read_bandwidth, 2 * big / largest_read_s, 1e3)
      << "the store's, not the raw 2.2 GB/s";
  EXPECT_NEAR(*hardware.nvme_write_bandwidth, 2 * big / (90e-6 + big / 2.4e9 + big / 2.4e9), 1e3)
      << "the largest batches, the smaller one left out";
  std::vector<TransferTiming> gets;
  for (const StoreSample& s : run.store)
    if (s.op == DiskOp::kRead) gets.push_back({s.bytes(), s.seconds});
  EXPECT_EQ(*hardware.nvme_latency, fit_link(gets).latency);
  EXPECT_NEAR(*hardware.nvme_store_read_cpu_per_gb, 0.08, 1e-12);
  EXPECT_NEAR(*hardware.nvme_store_write_cpu_per_gb, 0.05, 1e-12);
  const nlohmann::json json = summarize_calibration(run);
  EXPECT_EQ(json["hardware"]["nvme"]["store_read_cpu_per_gb"], "80.000ms");
  ASSERT_EQ(json["measurements"]["store"].size(), 9u);
  EXPECT_EQ(json["measurements"]["store"][1]["op"], "read");
  EXPECT_EQ(json["measurements"]["store"][1]["blocks"], 1);
}

// The file `kvtier-hw calibrate --out` writes: the keys it has always written, rates keyed by encoding.
TEST(CalibrationJson, KeepsTheFilesKeysAndReadsBackIntoTheSameRatesPerEncoding) {
  CalibrationRun run{
      .command = "kvtier-hw calibrate --out c.json", .device = "test GPU", .reference = h200()};
  run.kernels = {{"gather", 1.97e12},
                 {"scatter", 1.93e12},
                 {"quantize_turboquant4", 2.73e12},
                 {"dequantize_turboquant4", 2.40e12},
                 {"quantize_int4_g32", 2.87e12},
                 {"dequantize_int4_g32", 2.60e12}};
  run.copies.push_back({CopyDirection::kDeviceToDevice, 1u << 30, 0.25e-3, 4.2e12});
  const nlohmann::json json = summarize_calibration(run);
  std::vector<std::string> keys;
  for (const auto& [key, value] : json.items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"command", "device", "hardware", "kernels", "measurements",
                                            "reference_hardware", "tool"}));
  EXPECT_EQ(json["tool"], "kvtier-hw calibrate");
  EXPECT_EQ(json["reference_hardware"], "test H200");
  EXPECT_EQ(json["kernels"], nlohmann::json({{"gather_bytes_per_s", 1.97e12},
                                             {"scatter_bytes_per_s", 1.93e12},
                                             {"quantize_turboquant4_bytes_per_s", 2.73e12},
                                             {"dequantize_turboquant4_bytes_per_s", 2.40e12},
                                             {"quantize_int4_g32_bytes_per_s", 2.87e12},
                                             {"dequantize_int4_g32_bytes_per_s", 2.60e12}}));
  EXPECT_EQ(json["measurements"]["copy"][0],
            nlohmann::json(
                {{"direction", "d2d"}, {"bytes", 1u << 30}, {"seconds", 0.25e-3}, {"bytes_per_s", 4.2e12}}));
  const Calibration back = parse_calibration(json.dump(2), "c.json");
  Encoding int4;
  int4.kind = EncodingKind::kInt4Group;
  int4.group_size = 32;
  EXPECT_EQ(conversion_rate(back, Conversion::kDequantize, int4), 2.60e12);
  Encoding turboquant;
  turboquant.kind = EncodingKind::kTurboQuant4;
  EXPECT_EQ(conversion_rate(back, Conversion::kDequantize, turboquant), 2.40e12);
  EXPECT_DOUBLE_EQ(*back.hardware.memory_bandwidth_efficiency, 0.875);
}

TEST(CalibrationJson, AKernelNameOutsideTheFilesGrammarIsRefused) {
  CalibrationRun run{.command = "c", .device = "d", .reference = h200()};
  run.kernels = {{"dequantize_nf4", 1e12}};
  EXPECT_THROW(summarize_calibration(run), ConfigError);
}

TEST(PrefillGemmShapes, FollowLlama8BsCardWithItsPublishedMlpWidth) {
  const ModelCard model = parse_model_card(load_config("llama-3.1-8b", "models"));
  const auto shapes = prefill_gemm_shapes(model, 4096);
  ASSERT_EQ(shapes.size(), 4u);
  // QKV: 32 query heads + 2 x 8 KV heads of 128 = 6144 outputs from 4096 inputs.
  EXPECT_EQ(shapes[0].m, 6144);
  EXPECT_EQ(shapes[0].k, 4096);
  EXPECT_EQ(shapes[1].m, 4096);
  // intermediate_size 14,336 (meta-llama/Llama-3.1-8B config.json): gate and up fused, then down.
  EXPECT_EQ(shapes[2].m, 2 * 14336);
  EXPECT_EQ(shapes[3].k, 14336);
  for (const GemmShape& shape : shapes) EXPECT_EQ(shape.n, 4096);
}

TEST(PrefillGemmShapes, AnMoeCardRunsItsActiveExpertsAsOneMlp) {
  // Qwen3-30B-A3B: 8 routed experts of 768 per token, no shared one: the FLOPs of an MLP 6,144 wide.
  const ModelCard model = parse_model_card(load_config("qwen3-30b-a3b", "models"));
  const auto shapes = prefill_gemm_shapes(model, 1024);
  EXPECT_EQ(shapes[2].m, 2 * 8 * 768);
  EXPECT_EQ(shapes[3].k, 8 * 768);
}

TEST(PrefillGemmShapes, ACardWithoutAnMlpWidthIsRefused) {
  ModelCard model = parse_model_card(load_config("llama-3.1-8b", "models"));
  model.intermediate_size = 0;
  EXPECT_THROW(prefill_gemm_shapes(model, 4096), ConfigError);
}

TEST(TransformerShapeOfACard, Llama8BsCardGivesTheForwardPassShape) {
  const TransformerShape shape = transformer_shape(parse_model_card(load_config("llama-3.1-8b", "models")));
  const TransformerShape expected = llama_3_1_8b_shape();
  EXPECT_EQ(shape.layers, expected.layers);
  EXPECT_EQ(shape.hidden, expected.hidden);
  EXPECT_EQ(shape.heads, expected.heads);
  EXPECT_EQ(shape.kv_heads, expected.kv_heads);
  EXPECT_EQ(shape.head_dim, expected.head_dim);
  EXPECT_EQ(shape.intermediate, expected.intermediate);
  EXPECT_EQ(shape.vocab, expected.vocab);
  EXPECT_EQ(shape.rms_eps, expected.rms_eps);
  EXPECT_EQ(shape.rope_theta, expected.rope_theta);
}

std::string invalid_argument_of(const ModelCard& card) {
  try {
    transformer_shape(card);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TransformerShapeOfACard, MoeMlaAndMissingShapesAreNamed) {
  const std::string moe = invalid_argument_of(parse_model_card(load_config("qwen3-30b-a3b", "models")));
  EXPECT_NE(moe.find("Qwen3-30B-A3B: mixture of experts"), std::string::npos) << moe;
  EXPECT_NE(moe.find("not built yet"), std::string::npos) << moe;
  const std::string mla = invalid_argument_of(parse_model_card(load_config("deepseek-v3", "models")));
  EXPECT_NE(mla.find("DeepSeek-V3: multi-head latent attention"), std::string::npos) << mla;
  EXPECT_NE(mla.find("not built yet"), std::string::npos) << mla;
  ModelCard no_vocab = parse_model_card(load_config("llama-3.1-8b", "models"));
  no_vocab.vocab_size = 0;
  EXPECT_EQ(invalid_argument_of(no_vocab), "Llama-3.1-8B: the model card gives no vocab_size");
}

// Each GPU's efficiencies divide by its own card's peaks: the H100 by the H100 SXM card's 3.35 TB/s, not the
// H200's 4.8 TB/s.
TEST(CalibrationRun, TheReferenceCardIsTheDevicesOwnGpu) {
  EXPECT_EQ(reference_card_for("NVIDIA H100 80GB HBM3 (sm_90, 79.2 GiB)"), "h100-sxm");
  EXPECT_EQ(reference_card_for("NVIDIA H200 (sm_90, 139.8 GiB)"), "h200");
  EXPECT_EQ(reference_card_for("AMD Instinct MI355X (gfx950, 288.0 GiB)"), "mi355x");
  EXPECT_EQ(reference_card_for("AMD Instinct MI300X (gfx942, 192.0 GiB)"), "mi300x");
  for (const std::string card : {"h100-sxm", "h200", "mi355x", "mi300x"}) {
    EXPECT_NO_THROW(parse_hardware(load_config(card, "configs/hardware"))) << card;
  }
  // An A100 has no card; an H100 PCIe has the SXM card's name but not its 3.35 TB/s.
  for (const std::string device :
       {"NVIDIA A100-SXM4-80GB (sm_80, 79.2 GiB)", "NVIDIA H100 PCIe (sm_90, 79.1 GiB)"}) {
    std::string refusal = "(no error)";
    try {
      reference_card_for(device);
    } catch (const std::invalid_argument& e) {
      refusal = e.what();
    }
    EXPECT_NE(refusal.find(device), std::string::npos) << refusal;
    EXPECT_NE(refusal.find("--hardware"), std::string::npos) << refusal;
  }
}

}  // namespace
}  // namespace kvtier::hw
