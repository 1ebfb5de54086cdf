// End-to-end checks of `kvtier validate` on the committed fixtures (validate/fixtures/): the exit status
// for met and missed targets and for folders that cannot be compared, the JSON, the flags that move the
// targets, and the plots.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "sim/cli/cli_test_support.h"
#include "validate/compare/compare_test_support.h"

namespace kvtier {
namespace {

using validation::testing::copy_fixture;
using validation::testing::edit_file;

using testing::CliResult;

CliResult run_validate(const std::string& args, bool with_stderr = true) {
  return testing::run_shell("$KVTIER validate " + args, with_stderr);
}

const std::string kSim = "validate/fixtures/sim";

TEST(ValidateCli, PassingRunExitsZeroWithTheTable) {
  CliResult r = run_validate(kSim + " validate/fixtures/hw-pass");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("TTFT p50"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("451.00 ms"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ttft_p95"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("+3.57 % (limit 5 %), goal 3 % not met"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("every target met"), std::string::npos) << r.out;
}

TEST(ValidateCli, MissedTargetExitsOneAndNamesIt) {
  CliResult r = run_validate(kSim + " validate/fixtures/hw-miss");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(
      r.out.find("kvtier: error: the prediction missed 2 target(s): run: ttft_p50, run: requests_completed"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("transfer_time"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not compared"), std::string::npos) << r.out;
}

TEST(ValidateCli, JsonIsTheWholeOutputAndSaysWhatMissed) {
  CliResult r = run_validate(kSim + " validate/fixtures/hw-miss --format json", false);
  EXPECT_EQ(r.exit_code, 1);
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["passed"], false);
  EXPECT_EQ(j["missed"], (nlohmann::json{"run: ttft_p50", "run: requests_completed"}));
  EXPECT_NEAR(j["variants"][0]["checks"][0]["value"].get<double>(), 0.1275, 1e-9);
}

TEST(ValidateCli, LooserTargetsFromFlagsPass) {
  CliResult r = run_validate(kSim + " validate/fixtures/hw-miss --ttft-percentile-pct 13 --completed-pct 25");
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

TEST(ValidateCli, MismatchedHitsFail) {
  std::filesystem::path hw = copy_fixture("hw-pass", "cli-hits");
  ASSERT_TRUE(edit_file(hw / "run/requests.csv", "\n3,1,1,3,0,0.1,3.2,3.5,3.7,0.5,2560,3,1024,512,",
                        "\n3,1,1,3,0,0.1,3.2,3.5,3.7,0.5,2560,3,1024,0,"));
  CliResult r = run_validate(kSim + " " + hw.string());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("dram: 2048 predicted, 1536 measured"), std::string::npos) << r.out;
}

TEST(ValidateCli, MissingTransfersAreNotComparedAndDoNotFail) {
  std::filesystem::path hw = copy_fixture("hw-pass", "cli-no-transfers");
  std::filesystem::remove(hw / "run/transfers.csv");
  CliResult r = run_validate(kSim + " " + hw.string() + " --format json");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json check = nlohmann::json::parse(r.out)["variants"][0]["checks"][6];
  EXPECT_EQ(check["name"], "transfer_time");
  EXPECT_EQ(check["verdict"], "not compared");
}

TEST(ValidateCli, BadInputExitsTwoWithFileAndLine) {
  std::filesystem::path hw = copy_fixture("hw-pass", "cli-bad");
  ASSERT_TRUE(edit_file(hw / "run/requests.csv", "2.4,2.6,0.4", "2.4,2.6,zero"));
  CliResult r = run_validate(kSim + " " + hw.string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out, "kvtier: " + (hw / "run/requests.csv").string() +
                       ":4:25: column 'ttft_s': expected a number, got 'zero'\n");
}

TEST(ValidateCli, MissingFolderExitsTwo) {
  CliResult r = run_validate(kSim + " validate/fixtures/no-such-run");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out, "kvtier: validate/fixtures/no-such-run: not a folder\n");
}

TEST(ValidateCli, PlotsAndPerRequestErrorsAreWritten) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "kvtier-validate-cli-plots";
  std::filesystem::remove_all(dir);
  CliResult r = run_validate(kSim + " validate/fixtures/hw-pass --plot-dir " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* file : {"ttft_scatter.png", "ttft_cdf.png", "run/request_errors.csv"})
    EXPECT_GT(std::filesystem::file_size(dir / file), 0u) << file;
}

}  // namespace
}  // namespace kvtier
