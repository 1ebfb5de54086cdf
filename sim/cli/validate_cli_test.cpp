// End-to-end checks of `kvtier validate` on the committed fixtures (validate/fixtures/): the exit status
// for met and missed targets and for folders that cannot be compared, the JSON, the flags that move the
// targets, and the plots; and the SCENARIO --hw form, which simulates the hw-serve fixture's run itself.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
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

const std::string kServe = "validate/fixtures/serve-scenario.yaml --hw validate/fixtures/hw-serve";

// A fresh, empty folder under the temporary folder.
std::filesystem::path fresh_folder(const std::string& name) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("kvtier-validate-cli-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The fixture was simulated with the run's --set (a larger HBM) and its times perturbed by at most 3 %:
// simulating it again with that --set meets every target, and the temporary folder is gone afterwards.
TEST(ValidateCliScenario, SimulatesTheHardwareRunAndPasses) {
  std::filesystem::path tmp = fresh_folder("tmpdir");
  CliResult r = testing::run_shell("TMPDIR=" + tmp.string() + " $KVTIER validate " + kServe);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("predicted: simulation of validate/fixtures/serve-scenario.yaml (not kept"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("variant int4-dram"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("transfer bytes dram->hbm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("every target met"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::is_empty(tmp)) << "the simulated folder was left in " << tmp;
}

TEST(ValidateCliScenario, AnotherScenarioExitsTwoNamingBoth) {
  CliResult r = run_validate("configs/scenarios/h200-llama8b.yaml --hw validate/fixtures/hw-serve");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(
      r.out,
      "kvtier: configs/scenarios/h200-llama8b.yaml: scenario 'H200: Llama-3.1-8B, HBM -> DRAM -> disk', "
      "but validate/fixtures/hw-serve/summary.json is a run of scenario 'validation fixture: "
      "Llama-3.1-8B on one H200, HBM and DRAM' (kvtier-hw serve validate/fixtures/serve-scenario.yaml); "
      "validate a hardware run against the scenario it ran\n");
}

// The command line's --set replaces the run's for the same key: the scenario's own reserve leaves HBM
// fewer blocks than the run had, so the hits differ.
TEST(ValidateCliScenario, CommandLineSetReplacesTheRunsSet) {
  CliResult r = run_validate(kServe + " --set instance.activation_reserve=132.03GB --format json", false);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_NE(std::find(j["missed"].begin(), j["missed"].end(), "bf16: hit_tokens"), j["missed"].end()) << j;
}

TEST(ValidateCliScenario, SimOutKeepsTheSimulationWithItsRun) {
  std::filesystem::path out = std::filesystem::temp_directory_path() / "kvtier-validate-cli-sim-out";
  std::filesystem::remove_all(out);
  CliResult r = run_validate(kServe + " --sim-out " + out.string() + " --format json", false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["predicted"], out.string());
  nlohmann::json summary = nlohmann::json::parse(std::ifstream(out / "summary.json"));
  EXPECT_EQ(summary["run"]["set"], (nlohmann::json{"instance.activation_reserve=131.5GB"}));
  EXPECT_EQ(summary["run"]["trace"], "validate/fixtures/serve-trace.jsonl");
  EXPECT_TRUE(summary["run"]["calibration"].is_null());
  for (const char* file : {"bf16/requests.csv", "bf16/transfers.csv", "int4-dram/transfers.csv"})
    EXPECT_GT(std::filesystem::file_size(out / file), 0u) << file;
  // Again into the same folder: refused without --force, replaced with it.
  EXPECT_EQ(run_validate(kServe + " --sim-out " + out.string()).exit_code, 2);
  EXPECT_EQ(run_validate(kServe + " --sim-out " + out.string() + " --force").exit_code, 0);
}

// A closed loop (the committed H200 run of scenario (b)) is also simulated at the run's own arrivals, beside
// the prediction, and its cache is compared from that replay.
TEST(ValidateCliScenario, AClosedLoopsCacheIsPredictedAtTheMeasuredArrivals) {
  std::filesystem::path out = std::filesystem::temp_directory_path() / "kvtier-validate-cli-closed";
  std::filesystem::remove_all(out);
  CliResult r = run_validate(
      "validate/scenarios/h200-b-reuse.yaml --hw results/validation/h200/b-reuse "
      "--calibration results/validation/h200/calibration.json --format json --sim-out " +
          out.string(),
      false);
  ASSERT_LE(r.exit_code, 1) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["variants"][0]["cache_predicted_at"], "measured arrivals");
  nlohmann::json replay = nlohmann::json::parse(std::ifstream(out / "at-measured-arrivals" / "summary.json"));
  EXPECT_EQ(replay["run"]["arrivals"], "measured");
  EXPECT_GT(std::filesystem::file_size(out / "at-measured-arrivals" / "run" / "requests.csv"), 0u);
  EXPECT_FALSE(nlohmann::json::parse(std::ifstream(out / "summary.json"))["run"].contains("arrivals"));
}

// A closed-loop run whose requests.csv has no session and turn columns (written before they existed)
// cannot be replayed at its arrivals, nor its turns paired with the prediction's: bad input, named.
TEST(ValidateCliScenario, AClosedLoopRunWithoutSessionsCannotBeCompared) {
  const std::filesystem::path hw = std::filesystem::temp_directory_path() / "kvtier-validate-cli-no-sessions";
  std::filesystem::remove_all(hw);
  std::filesystem::copy("results/validation/h200/a-light", hw, std::filesystem::copy_options::recursive);
  std::ifstream in(hw / "run" / "requests.csv");
  std::string text, line;
  while (std::getline(in, line)) {  // drops the second and third cells, session and turn
    const size_t first = line.find(',');
    const size_t third = line.find(',', line.find(',', first + 1) + 1);
    text += line.substr(0, first) + line.substr(third) + "\n";
  }
  in.close();
  std::ofstream(hw / "run" / "requests.csv") << text;
  ASSERT_EQ(text.rfind("id,arrival_s,", 0), 0u) << text.substr(0, 40);
  CliResult r = run_validate("validate/scenarios/h200-a-light.yaml --hw " + hw.string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("requests.csv:2: a closed-loop run's request without a session"), std::string::npos)
      << r.out;
}

// --calibration is overlaid on the scenario: it moves the prediction, the simulated folder records it,
// and a missing file is bad input.
TEST(ValidateCliScenario, CalibrationIsOverlaid) {
  std::filesystem::path out = std::filesystem::temp_directory_path() / "kvtier-validate-cli-calibrated";
  std::filesystem::remove_all(out);
  CliResult r = run_validate(
      kServe + " --calibration results/hw/calibration-h200.json --format json --sim-out " + out.string(),
      false);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.out;
  CliResult plain = run_validate(kServe + " --format json", false);
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  auto predicted_ttft_p50 = [](const CliResult& result) {
    return nlohmann::json::parse(result.out)["variants"][0]["metrics"]["ttft_s"]["predicted"]["p50"];
  };
  EXPECT_NE(predicted_ttft_p50(r), predicted_ttft_p50(plain));
  nlohmann::json summary = nlohmann::json::parse(std::ifstream(out / "summary.json"));
  EXPECT_EQ(summary["run"]["calibration"], "results/hw/calibration-h200.json");
  CliResult missing = run_validate(kServe + " --calibration no-such-calibration.json");
  EXPECT_EQ(missing.exit_code, 2) << missing.out;
  EXPECT_NE(missing.out.find("no-such-calibration.json"), std::string::npos) << missing.out;
}

TEST(ValidateCliScenario, SimOutNeverTouchesAFolderKvtierDidNotWrite) {
  std::filesystem::path out = fresh_folder("not-ours");
  std::ofstream(out / "notes.txt") << "mine";
  CliResult r = run_validate(kServe + " --sim-out " + out.string() + " --force");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(std::filesystem::file_size(out / "notes.txt"), 4u);
  EXPECT_FALSE(std::filesystem::exists(out / "summary.json"));
}

TEST(ValidateCliScenario, FormsDoNotMix) {
  CliResult both = run_validate(kSim + " validate/fixtures/hw-pass --hw validate/fixtures/hw-serve");
  EXPECT_EQ(both.exit_code, 2) << both.out;
  EXPECT_NE(both.out.find("not both"), std::string::npos) << both.out;
  CliResult one = run_validate(kSim);
  EXPECT_EQ(one.exit_code, 2) << one.out;
  EXPECT_NE(one.out.find("expected two folders"), std::string::npos) << one.out;
  EXPECT_EQ(run_validate(kSim + " validate/fixtures/hw-pass --trace t.jsonl").exit_code, 2);
}

}  // namespace
}  // namespace kvtier
