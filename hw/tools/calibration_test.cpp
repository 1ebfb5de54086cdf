#include "calibration.h"

#include <gtest/gtest.h>

#include "embedded_files.h"
#include "model_card.h"
#include "units.h"

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
  const auto json = calibration_json(run);
  const auto& pcie = json["hardware"]["pcie"];
  // The 64 MiB copy: 67108864 B / (2 us + 1220.16 us) = 54.91 GB/s; / (3 us + 1198.37 us) = 55.86 GB/s.
  EXPECT_NEAR(parse_bandwidth(pcie["h2d_bandwidth"].get<std::string>()), 54.91e9, 0.006e9);
  EXPECT_NEAR(parse_bandwidth(pcie["d2h_bandwidth"].get<std::string>()), 55.86e9, 0.006e9);
  // Each direction's fitted latency.
  EXPECT_NEAR(parse_duration(pcie["h2d_latency"].get<std::string>()), 2.0e-6, 0.006e-6);
  EXPECT_NEAR(parse_duration(pcie["d2h_latency"].get<std::string>()), 3.0e-6, 0.006e-6);
  EXPECT_FALSE(pcie.contains("latency")) << "no shared latency beside the two";
  EXPECT_FALSE(json["hardware"].contains("nvme")) << "no disk samples, no nvme section";
}

TEST(CalibrationJson, DerivesMfuFromGemmFlopsAndHbmEfficiencyFromTheDeviceCopy) {
  CalibrationRun run{.command = "c", .device = "d", .reference = h200()};
  // 2 x 4096 x 4096 x 4096 FLOP in 0.25 ms = 549.8 TFLOP/s, 0.5559 of 989 TFLOP/s.
  run.gemms.push_back({"m", {"o", 4096, 4096, 4096}, 0.25e-3});
  run.copies.push_back({CopyDirection::kDeviceToDevice, 1u << 30, 0, 4.2e12});
  const auto gpu = calibration_json(run)["hardware"]["gpu"];
  EXPECT_NEAR(gpu["prefill_mfu"].get<double>(), 2.0 * 4096 * 4096 * 4096 / 0.25e-3 / 989e12, 1e-12);
  EXPECT_NEAR(gpu["memory_bandwidth_efficiency"].get<double>(), 0.875, 1e-12);
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
  const auto nvme = calibration_json(run)["hardware"]["nvme"];
  EXPECT_NEAR(parse_bandwidth(nvme["read_bandwidth"].get<std::string>()), 1.3e9, 0.006e9);
  EXPECT_NEAR(parse_bandwidth(nvme["write_bandwidth"].get<std::string>()), 1.6e9, 0.006e9);
  EXPECT_NEAR(parse_duration(nvme["latency"].get<std::string>()), 20e-6, 0.006e-6);
}

TEST(PrefillGemmShapes, FollowLlama8BsCardWithTheMlpWidthInferredFromItsParameters) {
  const ModelCard model = parse_model_card(load_config("llama-3.1-8b", "models"));
  const auto shapes = prefill_gemm_shapes(model, 4096);
  ASSERT_EQ(shapes.size(), 4u);
  // QKV: 32 query heads + 2 x 8 KV heads of 128 = 6144 outputs from 4096 inputs.
  EXPECT_EQ(shapes[0].m, 6144);
  EXPECT_EQ(shapes[0].k, 4096);
  EXPECT_EQ(shapes[1].m, 4096);
  // (8.03e9 / 32 - 4096 x 6144 - 4096 x 4096) / (3 x 4096) = 17008.6, to a multiple of 256: 66 x 256.
  EXPECT_EQ(shapes[2].m, 2 * 16896);
  EXPECT_EQ(shapes[3].k, 16896);
  for (const GemmShape& shape : shapes) EXPECT_EQ(shape.n, 4096);
}

}  // namespace
}  // namespace kvtier::hw
