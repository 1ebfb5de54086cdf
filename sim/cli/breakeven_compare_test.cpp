// kvtier breakeven --compare end to end: the exit status a validation script relies on (0 agreement,
// 1 a crossover missed, 2 bad input), on the hand-made sweeps of validate/fixtures/breakeven/ against the
// built-in H200 (uncalibrated: loading from DRAM wins at every length, recomputing from its 1.1 GB/s disk).
#include <gtest/gtest.h>

#include "sim/cli/cli_test_support.h"

namespace kvtier::testing {
namespace {

const std::string kCompare = "breakeven --hardware h200 --compare validate/fixtures/breakeven/";

TEST(BreakevenCompareCli, AgreementExitsZero) {
  const CliResult r = run_kvtier(kCompare + "h200-agree.json");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(
      r.out.find("bf16 from nvme: crossover predicted none in range (recompute wins throughout), measured "
                 "none in range (recompute wins throughout): agrees"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\npassed: "), std::string::npos) << r.out;
}

// DRAM: the model has load winning from 1K; the sweep, from 16K: four lengths apart.
TEST(BreakevenCompareCli, AMissedCrossoverExitsOne) {
  const CliResult r = run_kvtier(kCompare + "miss-by-two.json --format json");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("\"measured_crossover_tokens\": 16384"), std::string::npos) << r.out;
}

TEST(BreakevenCompareCli, BadInputExitsTwoNamingTheProblem) {
  const std::string broken =
      write_temp("kvtier-breakeven-compare-broken.json", "{\n  \"model\": \"x\",\n  oops\n}\n");
  CliResult r = run_kvtier("breakeven --hardware h200 --compare " + broken);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find(broken + ":3:3: invalid JSON"), std::string::npos) << r.out;
  r = run_kvtier("breakeven --compare validate/fixtures/breakeven/h200-agree.json");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("give --hardware"), std::string::npos) << r.out;
}

// --calibration lays the measured PCIe rate over the hardware file: 4K tokens × 131,072 B over 10 GB/s
// after 1 us is 53.6880912 ms (the file's 55.2 GB/s would take 9.7 ms).
TEST(BreakevenCalibrationCli, TheCalibrationsLinkPricesTheLoad) {
  const std::string calibration =
      write_temp("kvtier-breakeven-calibration.json",
                 R"({"hardware": {"pcie": {"h2d_bandwidth": "10GB/s", "h2d_latency": "1us"}}})");
  const std::string args =
      "breakeven --model llama-3.1-8b --hardware h200 --kv bf16 --context 4K --format json";
  const std::string load = "\"load_seconds\": 0.0536880912";
  EXPECT_NE(run_kvtier(args + " --calibration " + calibration).out.find(load), std::string::npos);
  EXPECT_EQ(run_kvtier(args).out.find(load), std::string::npos);
}

}  // namespace
}  // namespace kvtier::testing
