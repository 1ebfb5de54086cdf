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
  EXPECT_NE(r.out.find("bf16 from nvme: crossover predicted none in range (recompute wins throughout), measured "
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
  const std::string broken = write_temp("kvtier-breakeven-compare-broken.json", "{\n  \"model\": \"x\",\n  oops\n}\n");
  CliResult r = run_kvtier("breakeven --hardware h200 --compare " + broken);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find(broken + ":3:3: invalid JSON"), std::string::npos) << r.out;
  r = run_kvtier("breakeven --compare validate/fixtures/breakeven/h200-agree.json");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("give --hardware"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace kvtier::testing
