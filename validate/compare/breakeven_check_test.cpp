// Validation case (e)'s check on hand-made sweeps (validate/fixtures/breakeven/), against a hand-made
// prediction and, for the cost model's side, numbers worked out by hand.
#include "validate/compare/breakeven_check.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "sim/core/config.h"
#include "sim/core/config_files.h"

namespace kvtier::validation {
namespace {

const std::string kFixtures = "validate/fixtures/breakeven/";

std::string read_text(const std::string& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

std::vector<BreakevenTimes> by_winners(
    const std::string& winners) {  // "RRLL": recompute, recompute, load, load
  std::vector<BreakevenTimes> times;
  for (char w : winners) times.push_back(w == 'L' ? BreakevenTimes{0.1, 1, 2} : BreakevenTimes{0.1, 2, 1});
  return times;
}

TEST(BreakevenCrossover, FirstLengthFromWhichTheLastWinnerStays) {
  EXPECT_EQ(crossover_of(by_winners("RRLL")).index, 2u);
  EXPECT_EQ(crossover_of(by_winners("RRLL")).final_winner, Winner::kLoad);
  EXPECT_EQ(crossover_of(by_winners("RLRLL")).index, 3u);  // a flip back: the crossover is where it settles
  EXPECT_EQ(crossover_of(by_winners("LLLR")).index, 3u);
  EXPECT_EQ(crossover_of(by_winners("LLLR")).final_winner, Winner::kRecompute);
  EXPECT_EQ(crossover_of(by_winners("RRRR")).index, 0u);  // none in range
  EXPECT_EQ(crossover_of(by_winners("RRRR")).final_winner, Winner::kRecompute);
  EXPECT_EQ(crossover_of(by_winners("L")).index, 0u);
}

// The fixtures' DRAM series: recompute wins at 1K, 2K and 4K, load from 8K (agree.json) or from 16K
// (miss-by-two.json); NVMe: recompute at every length. The prediction puts DRAM's crossover at 4K.
BreakevenTimes hand_prediction(const std::string& kv, Medium path, int64_t prefix) {
  EXPECT_EQ(kv, "bf16");
  if (path == Medium::kDram && prefix >= 4096) return {0.5, 1, 2};
  return {0.5, 2, 1};
}

TEST(BreakevenCheck, CrossoversOneLengthApartAgreeAndBothNoneAgree) {
  const BreakevenCheck check =
      check_breakeven(load_measured_sweep(kFixtures + "agree.json"), hand_prediction);
  ASSERT_EQ(check.series.size(), 2u);
  const SeriesCheck& dram = check.series[0];
  EXPECT_EQ(dram.path, Medium::kDram);
  EXPECT_EQ(dram.prefix_tokens, (std::vector<int64_t>{1024, 2048, 4096, 8192, 16384}));
  EXPECT_EQ(dram.predicted_crossover.index, 2u);
  EXPECT_EQ(dram.measured_crossover.index, 3u);
  EXPECT_EQ(crossover_text(dram, dram.measured_crossover), "8K");
  EXPECT_EQ(dram.measured[3].hit_s, 0.7);
  EXPECT_EQ(dram.measured[3].miss_s, 0.8);
  EXPECT_EQ(dram.measured[3].load_s, 0.16);
  EXPECT_TRUE(dram.agrees());
  const SeriesCheck& nvme = check.series[1];
  EXPECT_EQ(nvme.measured_crossover.index, 0u);
  EXPECT_EQ(nvme.measured_crossover.final_winner, Winner::kRecompute);
  EXPECT_EQ(crossover_text(nvme, nvme.measured_crossover), "none in range");
  EXPECT_TRUE(nvme.agrees());
  EXPECT_TRUE(check.passed());
}

TEST(BreakevenCheck, CrossoverTwoLengthsLaterMisses) {
  const BreakevenCheck check =
      check_breakeven(load_measured_sweep(kFixtures + "miss-by-two.json"), hand_prediction);
  EXPECT_EQ(check.series[0].measured_crossover.index, 4u);
  EXPECT_FALSE(check.series[0].agrees());
  EXPECT_TRUE(check.series[1].agrees());
  EXPECT_FALSE(check.passed());
  const nlohmann::json json = to_json(check);
  EXPECT_EQ(json["passed"], false);
  EXPECT_EQ(json["series"][0]["measured_crossover_tokens"], 16384);
  EXPECT_EQ(json["series"][0]["predicted_crossover_tokens"], 4096);
  EXPECT_EQ(json["series"][1]["measured_crossover_tokens"], nullptr);
  EXPECT_EQ(json["series"][1]["final_winner"]["measured"], "recompute");
}

TEST(BreakevenCheck, DifferentWinnersThroughoutDisagree) {
  const BreakevenCheck check =
      check_breakeven(load_measured_sweep(kFixtures + "agree.json"), [](const std::string&, Medium, int64_t) {
        return BreakevenTimes{0.5, 1, 2};
      });
  EXPECT_EQ(check.series[1].predicted_crossover.index, 0u);
  EXPECT_EQ(check.series[1].measured_crossover.index, 0u);
  EXPECT_FALSE(check.series[1].agrees()) << "load always against recompute always";
  EXPECT_FALSE(check.series[0].agrees())
      << "a crossover at 8K against load at every length is 3 lengths apart";
}

std::string parse_error(const std::string& text) {
  try {
    parse_measured_sweep(text, "sweep.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(BreakevenCheck, BadFilesNameTheLineOrTheKey) {
  const std::string good = read_text(kFixtures + "agree.json");
  EXPECT_TRUE(parse_error("{\n  \"model\": \"x\",\n  oops\n}")
                  .starts_with("sweep.json:3:3: invalid JSON: syntax error"))
      << parse_error("{\n  \"model\": \"x\",\n  oops\n}");
  std::string no_miss = good;
  no_miss.replace(no_miss.find("\"miss_s\": 0.2"), 13, "\"miss\": 0.2");
  EXPECT_EQ(parse_error(no_miss), "sweep.json: points[1].miss_s: expected a number of seconds");
  std::string bad_path = good;
  bad_path.replace(bad_path.find("\"path\": \"nvme\""), 14, "\"path\": \"tape\"");
  EXPECT_EQ(parse_error(bad_path), "sweep.json: points[5].path: expected dram or nvme, got 'tape'");
  std::string no_points = good.substr(0, good.find("\"points\"")) + "\"other\": 1}";
  EXPECT_EQ(parse_error(no_points), "sweep.json: points: expected a list of measured points");
}

TEST(BreakevenCheck, RefusesASeriesMeasuredTwiceAtOneLength) {
  MeasuredSweep sweep = load_measured_sweep(kFixtures + "agree.json");
  sweep.points[1].prefix_tokens = 1024;
  EXPECT_THROW(check_breakeven(sweep, hand_prediction), ConfigError);
}

// Llama-3.1-8B: 32 layers × 8 KV heads × 128 dims × (K, V) = 65,536 values per token, 131,072 B in bf16;
// int4 with groups of 32 and a 2-byte scale and zero each: 65,536 × (0.5 + 4 / 32) = 40,960 B.
TEST(BreakevenPrediction, LoadIsLatencyBytesOverThePathAndTheConversionByHand) {
  SweepPricing pricing{parse_model_card(load_config("llama-3.1-8b", "models")),
                       parse_hardware(load_config("h200", "configs/hardware")), std::nullopt};
  // DRAM over PCIe: min(55.2 GB/s PCIe, 101 GB/s DRAM), 2.8 us.
  const BreakevenTimes bf16 = predict_breakeven(pricing, "bf16", "bf16", Medium::kDram, 4096, 1024);
  EXPECT_NEAR(bf16.load_s, 2.8e-6 + 4096 * 131072 / 55.2e9, 1e-12);
  EXPECT_GT(bf16.hit_s, bf16.load_s);
  EXPECT_GT(bf16.miss_s, bf16.hit_s - bf16.load_s) << "prefill(4K + 1K) costs more than prefill(1K | 4K)";
  // NVMe via DRAM: min(1 drive × 1.1 GB/s, PCIe), 20 us + 2.8 us.
  const BreakevenTimes nvme = predict_breakeven(pricing, "bf16", "bf16", Medium::kNvme, 4096, 1024);
  EXPECT_NEAR(nvme.load_s, 22.8e-6 + 4096 * 131072 / 1.1e9, 1e-12);
  EXPECT_NEAR(nvme.hit_s - nvme.load_s, bf16.hit_s - bf16.load_s, 1e-12);
  // int4 without a calibration: the conversion at 70 % of 4.8 TB/s over the bytes read and written.
  const BreakevenTimes int4 = predict_breakeven(pricing, "bf16", "int4", Medium::kDram, 4096, 1024);
  EXPECT_NEAR(int4.load_s, 2.8e-6 + 4096 * 40960 / 55.2e9 + 4096 * (40960 + 131072) / (0.7 * 4.8e12), 1e-12);
  // A calibration's PCIe rate and latency and its int4 dequantize rate (bf16 bytes per second: the
  // conversion takes 4096 × 131,072 B / 2.5e12 B/s).
  pricing.calibration = parse_calibration(
      R"({"hardware": {"pcie": {"h2d_bandwidth": "50GB/s", "h2d_latency": "2us"}},
          "kernels": {"dequantize_int4_g32_bytes_per_s": 2.5e12}})",
      "calibration.json");
  const BreakevenTimes calibrated = predict_breakeven(pricing, "bf16", "int4", Medium::kDram, 4096, 1024);
  EXPECT_NEAR(calibrated.load_s, 2e-6 + 4096 * 40960 / 50e9 + 4096 * 131072 / 2.5e12, 1e-12);
  EXPECT_THROW(predict_breakeven(pricing, "bf16", "bf16", Medium::kRemote, 4096, 1024), ConfigError);
}

}  // namespace
}  // namespace kvtier::validation
