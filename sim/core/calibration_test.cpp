#include "sim/core/calibration.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "sim/core/config_error_test_support.h"
#include "sim/core/config_files.h"

namespace kvtier {
namespace {

const char* kCommittedH200 = "results/hw/calibration-h200.json";

using testing::error_of;

Encoding int4_g(int group_size) {
  Encoding e;
  e.kind = EncodingKind::kInt4Group;
  e.group_size = group_size;
  return e;
}

Encoding turboquant4() {
  Encoding e;
  e.kind = EncodingKind::kTurboQuant4;
  return e;
}

Calibration with_conversions(std::vector<ConversionRate> conversions) {
  Calibration c;
  c.kernels.conversions = std::move(conversions);
  return c;
}

TEST(Calibration, CommittedH200FileLoadsWithTheValuesItHolds) {
  if (!std::filesystem::exists(kCommittedH200)) GTEST_SKIP() << "run from the source root";
  const Calibration c = load_calibration(kCommittedH200);
  EXPECT_EQ(c.tool, "kvtier-hw calibrate");
  EXPECT_EQ(c.device, "NVIDIA H200 (sm_90, 139.8 GiB)");
  EXPECT_EQ(c.command, "kvtier-hw calibrate --dir /work/main --out /root/out/calibration-h200.json");
  EXPECT_EQ(c.reference_hardware, "H200 (kvtier calibration machine)");
  const MeasuredHardware& h = c.hardware;
  EXPECT_EQ(h.prefill_mfu, 0.7404106586235029);
  EXPECT_EQ(h.memory_bandwidth_efficiency, 0.8894481272471217);
  EXPECT_DOUBLE_EQ(*h.pcie_h2d_bandwidth, 55.30e9);
  EXPECT_DOUBLE_EQ(*h.pcie_d2h_bandwidth, 55.31e9);
  // The file predates per-direction latencies: its one "latency" stands for both.
  EXPECT_DOUBLE_EQ(*h.pcie_h2d_latency, 2.24e-6);
  EXPECT_DOUBLE_EQ(*h.pcie_d2h_latency, 2.24e-6);
  EXPECT_DOUBLE_EQ(*h.nvme_read_bandwidth, 1.65e9);
  EXPECT_DOUBLE_EQ(*h.nvme_write_bandwidth, 2.18e9);
  EXPECT_DOUBLE_EQ(*h.nvme_latency, 31.50e-6);
  EXPECT_EQ(c.kernels.gather_bytes_per_s, 1971470723528.4128);
  EXPECT_EQ(c.kernels.scatter_bytes_per_s, 1927640137587.914);
  EXPECT_EQ(conversion_rate(c, Conversion::kQuantize, turboquant4()), 2726007984675.432);
  EXPECT_EQ(conversion_rate(c, Conversion::kDequantize, turboquant4()), 2396745068877.553);
  EXPECT_EQ(conversion_rate(c, Conversion::kQuantize, int4_g(32)), 2869862562923.337);
  EXPECT_EQ(conversion_rate(c, Conversion::kDequantize, int4_g(32)), 2601522105081.0273);
  EXPECT_EQ(conversion_rate(c, Conversion::kDequantize, int4_g(128)), std::nullopt) << "not measured";
  EXPECT_EQ(c.measurements["copy"].size(), 18u);
  EXPECT_EQ(c.measurements["disk"].size(), 16u);
  EXPECT_EQ(c.measurements["gemm"].size(), 8u);
  EXPECT_EQ(c.measurements["copy"][0]["seconds"].get<double>(), 2.6252799034118652e-06);
}

// The overlay before the typed one: the file's `hardware` keys set on the hardware YAML, then parsed.
HardwareConfig yaml_overlay(const std::string& hardware_name, const std::string& calibration_path) {
  ConfigNode hardware = load_config(hardware_name, "configs/hardware");
  ConfigNode overlay = ConfigNode::load_file(calibration_path).child("hardware");
  for (const std::string& section : overlay.keys()) {
    for (const std::string& key : overlay.child(section).keys())
      hardware.set(section + "." + key, overlay.child(section).child(key).as_string());
  }
  return parse_hardware(hardware);
}

TEST(Calibration, OverlayGivesTheHardwareTheKeyByKeyOverlayGave) {
  if (!std::filesystem::exists(kCommittedH200)) GTEST_SKIP() << "run from the source root";
  const HardwareConfig expected = yaml_overlay("h200", kCommittedH200);
  HardwareConfig typed = parse_hardware(load_config("h200", "configs/hardware"));
  overlay_calibration(load_calibration(kCommittedH200), typed);
  EXPECT_EQ(typed.gpu.prefill_mfu, expected.gpu.prefill_mfu);
  EXPECT_EQ(typed.gpu.memory_bandwidth_efficiency, expected.gpu.memory_bandwidth_efficiency);
  for (auto link : {&HardwareConfig::pcie_h2d, &HardwareConfig::pcie_d2h}) {
    EXPECT_EQ((typed.*link).bandwidth, (expected.*link).bandwidth);
    EXPECT_EQ((typed.*link).latency, (expected.*link).latency);
  }
  EXPECT_EQ(typed.nvme.read_bandwidth, expected.nvme.read_bandwidth);
  EXPECT_EQ(typed.nvme.write_bandwidth, expected.nvme.write_bandwidth);
  EXPECT_EQ(typed.nvme.latency, expected.nvme.latency);
  EXPECT_EQ(typed.nvme.capacity, expected.nvme.capacity) << "unmeasured keys keep the file's value";
  EXPECT_EQ(typed.gpu.hbm_bandwidth, 4.8e12);
}

TEST(Calibration, OverlaySetsOnlyWhatWasMeasured) {
  HardwareConfig hardware;
  hardware.pcie_h2d = {10e9, 5e-6};
  hardware.pcie_d2h = {11e9, 6e-6};
  hardware.gpu.prefill_mfu = 0.5;
  Calibration c;
  c.hardware.pcie_d2h_latency = 1.5e-6;
  c.hardware.prefill_mfu = 0.7;
  overlay_calibration(c, hardware);
  EXPECT_EQ(hardware.pcie_h2d.bandwidth, 10e9);
  EXPECT_EQ(hardware.pcie_h2d.latency, 5e-6);
  EXPECT_EQ(hardware.pcie_d2h.bandwidth, 11e9);
  EXPECT_EQ(hardware.pcie_d2h.latency, 1.5e-6);
  EXPECT_EQ(hardware.gpu.prefill_mfu, 0.7);
}

TEST(Calibration, OverlayTurnsTheStoresCpuPerGbIntoSecondsPerByte) {
  HardwareConfig hardware;
  Calibration c;
  c.hardware.nvme_store_read_cpu_per_gb = 0.075;
  overlay_calibration(c, hardware);
  EXPECT_DOUBLE_EQ(hardware.nvme.store_read_cpu, 0.075e-9);
  EXPECT_EQ(hardware.nvme.store_write_cpu, 0) << "not measured: no limit";
}

TEST(Calibration, AMeasuredDiskIsTheWholeNodesNotEachDrives) {
  // A card of 8 drives of 6.8 GB/s with an IOPS limit, calibrated on a machine whose disk read 2.1 GB/s
  // and wrote 3.1 GB/s: the node reads and writes at those rates, with the card's capacity.
  HardwareConfig hardware;
  hardware.nvme.drives = 8;
  hardware.nvme.capacity = 3.84e12;
  hardware.nvme.read_bandwidth = 6.8e9;
  hardware.nvme.read_iops = 100;  // 0.8 GB/s at 8 MiB I/Os: would bind below the measurement
  Calibration c;
  c.hardware.nvme_read_bandwidth = 2.1e9;
  c.hardware.nvme_write_bandwidth = 3.1e9;
  overlay_calibration(c, hardware);
  EXPECT_DOUBLE_EQ(hardware.nvme.node_read_bandwidth(), 2.1e9);
  EXPECT_DOUBLE_EQ(hardware.nvme.node_write_bandwidth(), 3.1e9);
  EXPECT_DOUBLE_EQ(hardware.nvme.drives * hardware.nvme.capacity, 8 * 3.84e12);
}

Calibration full_calibration() {
  Calibration c;
  c.tool = "kvtier-hw calibrate";
  c.command = "kvtier-hw calibrate --out x.json";
  c.device = "test GPU";
  c.reference_hardware = "H200 (kvtier calibration machine)";
  c.hardware = {.prefill_mfu = 0.74,
                .memory_bandwidth_efficiency = 0.889,
                .pcie_h2d_bandwidth = 55.3e9,
                .pcie_d2h_bandwidth = 55.31e9,
                .pcie_h2d_latency = 2.59e-6,
                .pcie_d2h_latency = 1.89e-6,
                .nvme_read_bandwidth = 1.65e9,
                .nvme_write_bandwidth = 2.18e9,
                .nvme_latency = 31.5e-6,
                .nvme_store_read_cpu_per_gb = 0.0775,
                .nvme_store_write_cpu_per_gb = 0.0412};
  Encoding fp8;
  fp8.kind = EncodingKind::kFp8;
  c.kernels = {.gather_bytes_per_s = 1.97e12,
               .scatter_bytes_per_s = 1.93e12,
               .conversions = {{turboquant4(), Conversion::kQuantize, 2.73e12},
                               {turboquant4(), Conversion::kDequantize, 2.40e12},
                               {int4_g(32), Conversion::kQuantize, 2.87e12},
                               {int4_g(128), Conversion::kDequantize, 2.61e12},
                               {fp8, Conversion::kQuantize, 3.1e12}}};
  c.measurements = {{"copy", {{{"direction", "h2d"}, {"bytes", 4096}, {"seconds", 2.6e-6}}}}};
  return c;
}

TEST(Calibration, RoundTripsThroughJsonWithHardwareValuesToTheirPrintedDigits) {
  const Calibration original = full_calibration();
  const nlohmann::json json = original;
  const Calibration back = parse_calibration(json.dump(2), "round-trip.json");
  EXPECT_EQ(back.tool, original.tool);
  EXPECT_EQ(back.command, original.command);
  EXPECT_EQ(back.device, original.device);
  EXPECT_EQ(back.reference_hardware, original.reference_hardware);
  EXPECT_EQ(back.kernels.gather_bytes_per_s, original.kernels.gather_bytes_per_s);
  EXPECT_EQ(back.kernels.scatter_bytes_per_s, original.kernels.scatter_bytes_per_s);
  ASSERT_EQ(back.kernels.conversions.size(), original.kernels.conversions.size());
  for (const ConversionRate& rate : original.kernels.conversions) {
    EXPECT_EQ(conversion_rate(back, rate.conversion, rate.encoding), rate.bytes_per_s)
        << rate.encoding.name() << ": kernel rates keep every digit";
  }
  EXPECT_EQ(back.measurements, original.measurements);
  EXPECT_EQ(back.hardware.prefill_mfu, 0.74);
  EXPECT_DOUBLE_EQ(*back.hardware.pcie_h2d_bandwidth, 55.30e9);
  EXPECT_DOUBLE_EQ(*back.hardware.pcie_d2h_bandwidth, 55.31e9);
  EXPECT_DOUBLE_EQ(*back.hardware.pcie_h2d_latency, 2.59e-6);
  EXPECT_DOUBLE_EQ(*back.hardware.pcie_d2h_latency, 1.89e-6);
  EXPECT_DOUBLE_EQ(*back.hardware.nvme_latency, 31.5e-6);
  EXPECT_EQ(nlohmann::json(back), json) << "a second trip changes nothing";
}

TEST(Calibration, WritesTheKeysOfTheHardwareFileAndOfTheKernels) {
  const nlohmann::json json = full_calibration();
  EXPECT_EQ(json["hardware"]["pcie"], nlohmann::json({{"h2d_bandwidth", "55.30GB/s"},
                                                      {"d2h_bandwidth", "55.31GB/s"},
                                                      {"h2d_latency", "2.59us"},
                                                      {"d2h_latency", "1.89us"}}));
  EXPECT_EQ(json["hardware"]["nvme"]["latency"], "31.50us");
  EXPECT_EQ(json["hardware"]["gpu"]["prefill_mfu"], 0.74);
  EXPECT_EQ(json["kernels"], nlohmann::json({{"gather_bytes_per_s", 1.97e12},
                                             {"scatter_bytes_per_s", 1.93e12},
                                             {"quantize_turboquant4_bytes_per_s", 2.73e12},
                                             {"dequantize_turboquant4_bytes_per_s", 2.40e12},
                                             {"quantize_int4_g32_bytes_per_s", 2.87e12},
                                             {"dequantize_int4_g128_bytes_per_s", 2.61e12},
                                             {"quantize_fp8_bytes_per_s", 3.1e12}}));
}

TEST(Calibration, LeavesUnmeasuredSectionsOut) {
  Calibration c;
  c.hardware.nvme_read_bandwidth = 0.5e9;
  const nlohmann::json json = c;
  EXPECT_EQ(json["hardware"], nlohmann::json({{"nvme", {{"read_bandwidth", "500.0MB/s"}}}}));
  EXPECT_EQ(json["kernels"], nlohmann::json::object());
}

// Every value is written in the largest unit where it rounds to 1 or more, and a value that rounds up
// into the next unit is written there, so that a file read and written again is the same file.
TEST(Calibration, WritesEachValueInAUnitItReadsBackFromAndAtTheEdgesOfUnits) {
  Calibration c;
  c.hardware.pcie_h2d_bandwidth = 999.996e9;  // 1000.00GB/s once rounded
  c.hardware.pcie_d2h_bandwidth = 1234.0;     // 0.0MB/s in one decimal: four digits instead
  c.hardware.nvme_read_bandwidth = 0.99996e9;
  c.hardware.pcie_h2d_latency = 0.0;
  c.hardware.pcie_d2h_latency = 0.9999996e-3;  // 1.000ms once rounded
  c.hardware.nvme_latency = 3e-9;              // 0.00us in two decimals
  const nlohmann::json json = c;
  EXPECT_EQ(json["hardware"]["pcie"], nlohmann::json({{"h2d_bandwidth", "1.000TB/s"},
                                                      {"d2h_bandwidth", "0.001234MB/s"},
                                                      {"h2d_latency", "0us"},
                                                      {"d2h_latency", "1.000ms"}}));
  EXPECT_EQ(json["hardware"]["nvme"],
            nlohmann::json({{"read_bandwidth", "1.00GB/s"}, {"latency", "0.003us"}}));
  EXPECT_EQ(nlohmann::json(parse_calibration(json.dump(), "back.json")), json);
}

TEST(Calibration, AnEncodingNoKernelImplementsCannotBeWritten) {
  Encoding fp32_scales = int4_g(32);
  fp32_scales.scale_bytes = 4;
  const Calibration c = with_conversions({{fp32_scales, Conversion::kQuantize, 1e12}});
  EXPECT_THROW({ const nlohmann::json json = c; }, std::invalid_argument);
}

// ---- errors ----

TEST(Calibration, MissingHardwareIsLocated) {
  EXPECT_EQ(error_of([] { parse_calibration("{\"kernels\": {}}", "c.json"); }),
            "c.json:1:1: missing required key 'hardware'");
}

TEST(Calibration, IllTypedValuesNameFileLineColumnAndKeyPath) {
  const std::string bandwidth_as_number =
      "{\n  \"hardware\": {\n    \"pcie\": {\"h2d_bandwidth\": 55e9}\n  }\n}\n";
  EXPECT_EQ(
      error_of([&] { parse_calibration(bandwidth_as_number, "c.json"); }),
      "c.json:3:31: hardware.pcie.h2d_bandwidth: expected a bandwidth such as 55GB/s or 4.8TB/s, got number");
  const std::string fraction_too_big = "{\"hardware\": {\"gpu\": {\"prefill_mfu\": 1.2}}}";
  EXPECT_EQ(error_of([&] { parse_calibration(fraction_too_big, "c.json"); }),
            "c.json:1:38: hardware.gpu.prefill_mfu: expected a fraction in (0, 1]");
  const std::string rate_as_string = "{\"hardware\": {},\n \"kernels\": {\"gather_bytes_per_s\": \"fast\"}}";
  EXPECT_EQ(error_of([&] { parse_calibration(rate_as_string, "c.json"); }),
            "c.json:2:36: kernels.gather_bytes_per_s: expected a positive rate in bytes per second");
  EXPECT_EQ(error_of([&] { parse_calibration("{\"hardware\": [], \"device\": 3}", "c.json"); }),
            "c.json:1:28: device: expected a string, got number");
}

TEST(Calibration, UnknownKeysSuggestTheClosestKnownOne) {
  EXPECT_EQ(
      error_of(
          [] { parse_calibration("{\"hardware\": {\"pcie\": {\"h2d_bandwith\": \"5GB/s\"}}}", "c.json"); }),
      "c.json:1:40: hardware.pcie.h2d_bandwith: unknown key 'h2d_bandwith' (did you mean 'h2d_bandwidth'?)");
  std::string message = error_of([] {
    parse_calibration("{\"hardware\": {}, \"kernels\": {\"quantize_int4_g032_bytes_per_s\": 1e12}}",
                      "c.json");
  });
  EXPECT_EQ(message.rfind("c.json:1:64: kernels.quantize_int4_g032_bytes_per_s: unknown kernel", 0), 0u)
      << message;
  EXPECT_NE(message.find("did you mean 'quantize_int4_g32_bytes_per_s'"), std::string::npos) << message;
}

TEST(Calibration, InvalidJsonIsLocated) {
  std::string message = error_of([] { parse_calibration("{\n  \"hardware\": {,\n}", "c.json"); });
  EXPECT_EQ(message.rfind("c.json:2:16: invalid JSON: ", 0), 0u) << message;
}

TEST(Calibration, ANumberTooLargeForADoubleIsLocatedInvalidJson) {
  std::string message = error_of([] {
    parse_calibration("{\"hardware\": {},\n \"measurements\": {\"copy\": [{\"bytes\": 4e999}]}}", "c.json");
  });
  EXPECT_EQ(message, "c.json:2:38: invalid JSON: number overflow parsing '4e999'") << message;
}

TEST(Calibration, MissingFileIsNamed) {
  EXPECT_EQ(error_of([] { load_calibration("no/such/calibration.json"); }),
            "no/such/calibration.json: cannot open file");
}

// ---- rates by encoding ----

TEST(Calibration, AnInt4RateIsNeverTakenForTurboQuantNorTheOtherWayRound) {
  const Calibration turboquant_only = with_conversions({{turboquant4(), Conversion::kDequantize, 2.4e12}});
  EXPECT_EQ(conversion_rate(turboquant_only, Conversion::kDequantize, int4_g(32)), std::nullopt);
  const Calibration int4_only = with_conversions({{int4_g(32), Conversion::kDequantize, 2.6e12}});
  EXPECT_EQ(conversion_rate(int4_only, Conversion::kDequantize, turboquant4()), std::nullopt);
  EXPECT_EQ(conversion_rate(int4_only, Conversion::kDequantize, int4_g(128)), std::nullopt) << "other group";
  EXPECT_EQ(conversion_rate(int4_only, Conversion::kQuantize, int4_g(32)), std::nullopt) << "other direction";
  EXPECT_EQ(conversion_rate(int4_only, Conversion::kDequantize, int4_g(32)), 2.6e12);
}

TEST(Calibration, EncodingsMatchByTheFieldsTheirFormatUses) {
  Encoding turboquant_with_stray_group = turboquant4();
  turboquant_with_stray_group.group_size = 64;  // unused by TurboQuant
  const Calibration c = with_conversions({{turboquant4(), Conversion::kQuantize, 2.7e12}});
  EXPECT_EQ(conversion_rate(c, Conversion::kQuantize, turboquant_with_stray_group), 2.7e12);
  Encoding wider_slots = turboquant4();
  wider_slots.slot_align = 16;
  EXPECT_EQ(conversion_rate(c, Conversion::kQuantize, wider_slots), std::nullopt);
  Encoding fp32_scales = int4_g(32);
  fp32_scales.scale_bytes = 4;
  EXPECT_FALSE(same_format(fp32_scales, int4_g(32)));
  EXPECT_EQ(kernel_encoding_name(fp32_scales), std::nullopt);
  EXPECT_EQ(kernel_encoding_name(int4_g(128)), "int4_g128");
  EXPECT_EQ(kernel_encoding_name(Encoding{}), std::nullopt) << "bf16 needs no kernel";
}

// Llama-3.1-8B: 32 layers, 8 KV heads of 128. Per token and layer bf16 is 2 x 8 x 128 x 2 = 4,096 B and a
// TurboQuant layer 8 x 136 = 1,088 B; the turboquant4 preset keeps layers 0-1 and 30-31 in bf16.
TEST(Calibration, LayoutConversionChargesTheMeasuredKernelOnTheLayersThatDiffer) {
  const ModelCard model = parse_model_card(load_config("llama-3.1-8b", "models"));
  const KvLayout bf16 = resolve_kv_layout(model, "bf16");
  const KvLayout turboquant = resolve_kv_layout(model, "turboquant4");
  const Calibration c = with_conversions(
      {{turboquant4(), Conversion::kDequantize, 2.4e12}, {turboquant4(), Conversion::kQuantize, 2.7e12}});
  // Bytes read plus written per token: 4 x 4,096 + 28 x 1,088 + 32 x 4,096 = 177,920; kernel time per
  // token: 28 layers x 4,096 bf16 bytes / rate.
  const double both_layouts = 177920;
  EXPECT_DOUBLE_EQ(*layout_conversion_bytes_per_s(c, model, turboquant, bf16),
                   both_layouts / (28 * 4096 / 2.4e12));
  EXPECT_DOUBLE_EQ(*layout_conversion_bytes_per_s(c, model, bf16, turboquant),
                   both_layouts / (28 * 4096 / 2.7e12));
  EXPECT_EQ(layout_conversion_bytes_per_s(c, model, bf16, bf16), std::numeric_limits<double>::infinity());
  EXPECT_EQ(layout_conversion_bytes_per_s(c, model, bf16, resolve_kv_layout(model, "int4")), std::nullopt)
      << "int4 was not measured: no rate, the TurboQuant one is not borrowed";
}

TEST(Calibration, ConvertingBetweenTwoQuantizedLayoutsDequantizesThenQuantizes) {
  const ModelCard model = parse_model_card(load_config("llama-3.1-8b", "models"));
  const KvLayout int4 = resolve_kv_layout(model, "int4");  // 2 x 8 x (64 + 4 x 4) = 1,280 B per layer
  const KvLayout turboquant_all = resolve_kv_layout(model, "turboquant4-all");
  const Calibration c = with_conversions(
      {{int4_g(32), Conversion::kDequantize, 2.0e12}, {turboquant4(), Conversion::kQuantize, 4.0e12}});
  const double seconds_per_token = 32 * 4096 / 2.0e12 + 32 * 4096 / 4.0e12;
  EXPECT_DOUBLE_EQ(*layout_conversion_bytes_per_s(c, model, int4, turboquant_all),
                   32 * (1280 + 1088) / seconds_per_token);
}

// What the simulator charges: the measured rate on each of the GPUs, else 70 % of their HBM bandwidth.
TEST(Calibration, ChargedConversionIsTheKernelsOnEveryGpuElseSeventyPercentOfHbm) {
  const ModelCard model = parse_model_card(load_config("llama-3.1-8b", "models"));
  const KvLayout bf16 = resolve_kv_layout(model, "bf16");
  const KvLayout turboquant = resolve_kv_layout(model, "turboquant4");
  const std::optional<Calibration> c = with_conversions({{turboquant4(), Conversion::kDequantize, 2.4e12}});
  const double hbm = 4.8e12;
  EXPECT_DOUBLE_EQ(charged_conversion_bytes_per_s(c, model, turboquant, bf16, hbm, 3),
                   3 * 177920 / (28 * 4096 / 2.4e12));
  EXPECT_DOUBLE_EQ(charged_conversion_bytes_per_s(c, model, bf16, turboquant, hbm, 3), 1.008e13)
      << "quantizing was not measured: 3 x 4.8e12 x 0.7";
  EXPECT_DOUBLE_EQ(charged_conversion_bytes_per_s(std::nullopt, model, turboquant, bf16, hbm, 1), 3.36e12);
}

// ---- the serving step costs ----

Calibration with_serving() {
  Calibration c;
  c.serving = ServingCalibration{.model = "Llama-3.1-8B",
                                 .costs = {.step_overhead_s = 1.234567e-3,
                                           .linear_mfu = 0.6123456789,
                                           .attention_mfu = 0.41,
                                           .attention_half_rate_keys = 1115.5,
                                           .attention_half_rate_queries = 256.25,
                                           .attention_bandwidth_efficiency = 0.79}};
  return c;
}

TEST(Calibration, ServingStepCostsRoundTripWithEveryDigit) {
  const nlohmann::json json = with_serving();
  EXPECT_EQ(json["serving"], nlohmann::json({{"model", "Llama-3.1-8B"},
                                             {"step_overhead_s", 1.234567e-3},
                                             {"linear_mfu", 0.6123456789},
                                             {"attention_mfu", 0.41},
                                             {"attention_half_rate_keys", 1115.5},
                                             {"attention_half_rate_queries", 256.25},
                                             {"attention_bandwidth_efficiency", 0.79}}));
  const Calibration back =
      parse_calibration("{\"hardware\": {}, \"serving\": " + json["serving"].dump() + "}", "c.json");
  ASSERT_TRUE(back.serving);
  EXPECT_EQ(back.serving->model, "Llama-3.1-8B");
  EXPECT_EQ(back.serving->costs.step_overhead_s, 1.234567e-3);
  EXPECT_EQ(back.serving->costs.linear_mfu, 0.6123456789);
  EXPECT_EQ(back.serving->costs.attention_mfu, 0.41);
  EXPECT_EQ(back.serving->costs.attention_half_rate_keys, 1115.5);
  EXPECT_EQ(back.serving->costs.attention_half_rate_queries, 256.25);
  EXPECT_EQ(back.serving->costs.attention_bandwidth_efficiency, 0.79);
  EXPECT_FALSE(nlohmann::json(Calibration{}).contains("serving")) << "no fit, no section";
}

TEST(Calibration, ServingStepCostsApplyToTheModelTheyWereFittedFor) {
  const Calibration c = with_serving();
  ModelCard llama;
  llama.name = "Llama-3.1-8B";
  ModelCard other;
  other.name = "Llama-3.1-70B";
  ASSERT_TRUE(serving_step_costs(c, llama));
  EXPECT_EQ(serving_step_costs(c, llama)->attention_half_rate_keys, 1115.5);
  EXPECT_EQ(serving_step_costs(c, other), std::nullopt);
  EXPECT_EQ(serving_step_costs(Calibration{}, llama), std::nullopt);
}

TEST(Calibration, ServingErrorsAreLocated) {
  const std::string missing = "{\"hardware\": {},\n \"serving\": {\"model\": \"m\", \"linear_mfu\": 0.5}}";
  EXPECT_EQ(error_of([&] { parse_calibration(missing, "c.json"); }),
            "c.json:2:13: serving: missing required key 'step_overhead_s'");
  const std::string negative =
      "{\"hardware\": {}, \"serving\": {\"model\": \"m\", \"step_overhead_s\": 0, \"linear_mfu\": -0.5, "
      "\"attention_mfu\": 0.4, \"attention_half_rate_keys\": 0, \"attention_bandwidth_efficiency\": 0.8}}";
  EXPECT_EQ(error_of([&] { parse_calibration(negative, "c.json"); }),
            "c.json:1:80: serving.linear_mfu: expected a positive number");
  const std::string misspelt = "{\"hardware\": {}, \"serving\": {\"linear_mf\": 0.5}}";
  EXPECT_EQ(error_of([&] { parse_calibration(misspelt, "c.json"); }),
            "c.json:1:43: serving.linear_mf: unknown key 'linear_mf' (did you mean 'linear_mfu'?)");
  const std::string model_number = "{\"hardware\": {}, \"serving\": {\"model\": 8}}";
  EXPECT_EQ(error_of([&] { parse_calibration(model_number, "c.json"); }),
            "c.json:1:39: serving.model: expected a string, got number");
}

// ---- the serving step costs with attention priced from the kernel's blocks ----

Calibration with_block_attention() {
  Calibration c;
  c.serving =
      ServingCalibration{.model = "Llama-3.1-8B",
                         .costs = {.step_overhead_s = 1.5e-3,
                                   .linear_mfu = 0.61,
                                   .attention = AttentionCosts{.query_rows = 64,
                                                               .multiprocessors = 132,
                                                               .max_splits = 32,
                                                               .min_split_keys = 512,
                                                               .unsplit = {.key_tile = 128,
                                                                           .slots = 264,
                                                                           .launch_s = 4.25e-6,
                                                                           .block_s = 1.125e-6,
                                                                           .key_tile_s = 2.2345678901e-6,
                                                                           .row_group_tile_s = 3.5e-8,
                                                                           .empty_block_s = 0.375e-6},
                                                               .split = {.key_tile = 64,
                                                                         .slots = 132,
                                                                         .launch_s = 9.5e-6,
                                                                         .block_s = 0,
                                                                         .key_tile_s = 2.0517e-6,
                                                                         .row_group_tile_s = 0.125e-6}}}};
  return c;
}

TEST(Calibration, ServingAttentionRoundTripsWithoutTheFormulaKeys) {
  const nlohmann::json json = with_block_attention();
  const nlohmann::json kernel_keys = {{"key_tile", 128},
                                      {"slots", 264},
                                      {"launch_s", 4.25e-6},
                                      {"block_s", 1.125e-6},
                                      {"key_tile_s", 2.2345678901e-6},
                                      {"row_group_tile_s", 3.5e-8},
                                      {"empty_block_s", 0.375e-6}};
  EXPECT_EQ(json["serving"], nlohmann::json({{"model", "Llama-3.1-8B"},
                                             {"step_overhead_s", 1.5e-3},
                                             {"linear_mfu", 0.61},
                                             {"attention",
                                              {{"query_rows", 64},
                                               {"multiprocessors", 132},
                                               {"max_splits", 32},
                                               {"min_split_keys", 512},
                                               {"unsplit", kernel_keys},
                                               {"split",
                                                {{"key_tile", 64},
                                                 {"slots", 132},
                                                 {"launch_s", 9.5e-6},
                                                 {"block_s", 0.0},
                                                 {"key_tile_s", 2.0517e-6},
                                                 {"row_group_tile_s", 0.125e-6},
                                                 {"empty_block_s", 0.0}}}}}}));
  const Calibration back =
      parse_calibration("{\"hardware\": {}, \"serving\": " + json["serving"].dump() + "}", "c.json");
  ASSERT_TRUE(back.serving && back.serving->costs.attention);
  const AttentionCosts& a = *back.serving->costs.attention;
  const Calibration original = with_block_attention();
  const AttentionCosts& expected = *original.serving->costs.attention;
  EXPECT_EQ(a.query_rows, 64);
  EXPECT_EQ(a.multiprocessors, 132);
  EXPECT_EQ(a.max_splits, 32);
  EXPECT_EQ(a.min_split_keys, 512);
  for (const auto& [read, written] : {std::pair{a.unsplit, expected.unsplit}, {a.split, expected.split}}) {
    EXPECT_EQ(read.key_tile, written.key_tile);
    EXPECT_EQ(read.slots, written.slots);
    EXPECT_EQ(read.launch_s, written.launch_s);
    EXPECT_EQ(read.block_s, written.block_s);
    EXPECT_EQ(read.key_tile_s, written.key_tile_s);
    EXPECT_EQ(read.row_group_tile_s, written.row_group_tile_s);
    EXPECT_EQ(read.empty_block_s, written.empty_block_s);
  }
  EXPECT_EQ(back.serving->costs.attention_mfu, 0) << "formula keys are optional beside attention";
  EXPECT_FALSE(nlohmann::json(with_serving())["serving"].contains("attention")) << "no blocks, no object";
}

// Files fitted before empty blocks were priced have no empty_block_s: 0, so their launches price as then.
TEST(Calibration, AKernelWithoutEmptyBlockTimeReadsAsNone) {
  nlohmann::json serving = nlohmann::json(with_block_attention())["serving"];
  serving["attention"]["unsplit"].erase("empty_block_s");
  const Calibration back =
      parse_calibration("{\"hardware\": {}, \"serving\": " + serving.dump() + "}", "c.json");
  EXPECT_EQ(back.serving->costs.attention->unsplit.empty_block_s, 0);
  serving["attention"]["unsplit"]["empty_block_s"] = -1e-6;
  EXPECT_NE(error_of([&] {
              parse_calibration("{\"hardware\": {}, \"serving\": " + serving.dump() + "}", "c.json");
            }).find("serving.attention.unsplit.empty_block_s: expected a number of 0 or more"),
            std::string::npos);
}

TEST(Calibration, ServingAttentionKeepsFormulaKeysThatWereFitted) {
  Calibration c = with_serving();
  c.serving->costs.attention = with_block_attention().serving->costs.attention;
  const nlohmann::json json = c;
  EXPECT_EQ(json["serving"]["attention_mfu"], 0.41);
  const Calibration back =
      parse_calibration("{\"hardware\": {}, \"serving\": " + json["serving"].dump() + "}", "c.json");
  EXPECT_EQ(back.serving->costs.attention_half_rate_queries, 256.25);
  EXPECT_TRUE(back.serving->costs.attention);
}

TEST(Calibration, ServingPowerThrottleRoundTripsAndIsChecked) {
  Calibration c = with_serving();
  c.serving->costs.throttle = PowerThrottle{.onset_s = 0.35, .slowdown = 1.125};
  const nlohmann::json json = c;
  EXPECT_EQ(json["serving"]["power"], nlohmann::json({{"onset_s", 0.35}, {"slowdown", 1.125}}));
  const Calibration back = parse_calibration(json.dump(), "c.json");
  ASSERT_TRUE(back.serving->costs.throttle);
  EXPECT_EQ(back.serving->costs.throttle->onset_s, 0.35);
  EXPECT_EQ(back.serving->costs.throttle->slowdown, 1.125);
  EXPECT_FALSE(nlohmann::json(with_serving())["serving"].contains("power")) << "no throttle, no object";
  // The power object opens at column 220 of the one line, its slowdown at 249.
  const std::string serving =
      "{\"hardware\": {}, \"serving\": {\"model\": \"m\", \"step_overhead_s\": 0, "
      "\"linear_mfu\": 0.5, \"attention_mfu\": 0.5, \"attention_half_rate_keys\": 0, "
      "\"attention_half_rate_queries\": 0, \"attention_bandwidth_efficiency\": 0.5, ";
  EXPECT_EQ(error_of([&] {
              parse_calibration(serving + "\"power\": {\"onset_s\": 0.2, \"slowdown\": 0.9}}}", "c.json");
            }),
            "c.json:1:249: serving.power.slowdown: expected a factor of 1 or more");
  EXPECT_EQ(error_of([&] { parse_calibration(serving + "\"power\": {\"slowdown\": 1.1}}}", "c.json"); }),
            "c.json:1:220: serving.power: missing required key 'onset_s'");
  // Prefill attention's own factor is optional, written only when fitted, and checked like the other.
  EXPECT_FALSE(back.serving->costs.throttle->attention_slowdown);
  c.serving->costs.throttle->attention_slowdown = 1.25;
  const Calibration split = parse_calibration(nlohmann::json(c).dump(), "c.json");
  EXPECT_EQ(split.serving->costs.throttle->attention_slowdown, 1.25);
  EXPECT_EQ(error_of([&] {
              parse_calibration(
                  serving + "\"power\": {\"onset_s\": 0.2, \"slowdown\": 1.1, \"attention_slowdown\": 0}}}",
                  "c.json");
            }),
            "c.json:1:276: serving.power.attention_slowdown: expected a factor of 1 or more");
}

// A serving section whose attention object has each key on a line of its own, `from` replaced by `to`.
std::string attention_file(const std::string& from = "", const std::string& to = "") {
  std::string text =
      "{\"hardware\": {},\n"
      " \"serving\": {\"model\": \"m\", \"step_overhead_s\": 0, \"linear_mfu\": 0.5,\n"
      "  \"attention\": {\"query_rows\": 128, \"multiprocessors\": 132, \"max_splits\": 64, "
      "\"min_split_keys\": 256,\n"
      "   \"unsplit\": {\"key_tile\": 128, \"slots\": 132, \"launch_s\": 5e-06, \"block_s\": 1e-06, "
      "\"key_tile_s\": 2e-06, \"row_group_tile_s\": 0},\n"
      "   \"split\": {\"key_tile\": 64, \"slots\": 132, \"launch_s\": 7e-06, \"block_s\": 1e-06, "
      "\"key_tile_s\": 3e-06, \"row_group_tile_s\": 1e-07}}}}";
  if (!from.empty()) {
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  }
  return text;
}

TEST(Calibration, ServingAttentionErrorsAreLocated) {
  auto error_with = [](const std::string& from, const std::string& to) {
    return error_of([&] { parse_calibration(attention_file(from, to), "c.json"); });
  };
  EXPECT_TRUE(parse_calibration(attention_file(), "c.json").serving->costs.attention) << "the file is valid";
  // Line 3: `  "attention": ` is 15 characters, so its object opens at column 16.
  EXPECT_EQ(error_with("\"multiprocessors\": 132, ", ""),
            "c.json:3:16: serving.attention: missing required key 'multiprocessors'");
  // Line 4: `   "unsplit": ` is 14 characters; the object opens at 15, "slots" at 33 and its value at 42.
  EXPECT_EQ(error_with("\"slots\": 132, \"launch_s\": 5e-06", "\"launch_s\": 5e-06"),
            "c.json:4:15: serving.attention.unsplit: missing required key 'slots'");
  EXPECT_EQ(error_with("\"slots\": 132, \"launch_s\": 5e-06", "\"slots\": 0, \"launch_s\": 5e-06"),
            "c.json:4:42: serving.attention.unsplit.slots: expected a positive integer");
  EXPECT_EQ(error_with("\"slots\": 132, \"launch_s\": 5e-06", "\"slots\": 1.5, \"launch_s\": 5e-06"),
            "c.json:4:42: serving.attention.unsplit.slots: expected a positive integer");
  // Line 5: `   "split": {"key_tile": 64, "slots": 132, "launch_s": 7e-06, "block_s": ` is 73 characters; an
  // unknown key is located at its value, `   "split": {"key_tiles": ` being 26.
  EXPECT_EQ(error_with("\"block_s\": 1e-06, \"key_tile_s\": 3e-06", "\"block_s\": -1, \"key_tile_s\": 3e-06"),
            "c.json:5:74: serving.attention.split.block_s: expected a number of 0 or more");
  EXPECT_EQ(
      error_with("\"split\": {\"key_tile\": 64", "\"split\": {\"key_tiles\": 64"),
      "c.json:5:27: serving.attention.split.key_tiles: unknown key 'key_tiles' (did you mean 'key_tile'?)");
  EXPECT_EQ(error_with("\"query_rows\": 128", "\"query_rows\": \"128\""),
            "c.json:3:31: serving.attention.query_rows: expected a positive integer");
  const std::string not_an_object =
      "{\"hardware\": {}, \"serving\": {\"model\": \"m\", \"step_overhead_s\": 0, \"linear_mfu\": 0.5, "
      "\"attention\": 4}}";
  EXPECT_EQ(error_of([&] { parse_calibration(not_an_object, "c.json"); }),
            "c.json:1:98: serving.attention: expected an object, got number");
}

}  // namespace
}  // namespace kvtier
