// `kvtier plan` end to end against the binary, on a scenario small enough that a plan takes seconds: the
// reasoning and tables it prints, its JSON, the verdict when no size meets the targets, and a bad plan file
// refused (exit 2, located) before anything runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sim/cli/cli_test_support.h"
#include "sim/core/temporary_folder.h"

namespace fs = std::filesystem;

namespace kvtier {
namespace {

using testing::run_kvtier;
using testing::run_shell;

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

class Plan : public ::testing::Test {
 protected:
  void SetUp() override {
    scenario_ = (root_ / "tiny.yaml").string();
    write_text(scenario_, testing::kTinyScenario);
  }

  // A plan over the DRAM tier of the tiny scenario with these targets.
  std::string plan(const std::string& targets, const std::string& extra = "") {
    std::string path = (root_ / "plan.yaml").string();
    write_text(path,
               "scenario: " + scenario_ + "\nset: {workload.sessions: 3}\ntargets: " + targets +
                   "\nchoices:\n  bf16:\n    cache.tiers[1].kv: bf16\n  int4:\n    cache.tiers[1].kv: int4\n"
                   "size:\n  key: cache.tiers[1].capacity\n  menu: [1GiB, 4GiB, 16GiB, 64GiB]\nseeds: 2\n" +
                   extra);
    return path;
  }

  TemporaryFolder folder_{"kvtier_plan"};
  const fs::path& root_ = folder_.path();
  std::string scenario_;
};

TEST_F(Plan, LooseTargetsChooseTheSmallestSizeAndSayNothingBinds) {
  testing::CliResult r = run_kvtier("plan " + plan("{ttft_p95: 1min, tpot_p95: 10s}") + " --jobs 2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* expected :
       {"question: the smallest cache.tiers[1].capacity of [1GiB, 4GiB, 16GiB, 64GiB] with ttft_p95 <= 60.00 "
        "s",
        "Bisection over 4 sizes with seed 1", "Confirmation with seeds 1,2", "Answer per choice", "Frontier",
        "1GiB is the smallest size on the menu and meets every target: nothing binds", "mean TTFT",
        "Monotonicity: on every point run", "Verdict: bf16 with cache.tiers[1].capacity = 1GiB, the smallest",
        "(int4 needs 1GiB)", "Simulations: "}) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << expected << "\n" << r.out;
  }
}

TEST_F(Plan, JsonHasEveryPointAndTheVerdictWhenNothingMeetsTheTargets) {
  testing::CliResult r = run_shell(
      "$KVTIER plan " + plan("{ttft_p95: 1us, hit_rate: 0.1}") + " --jobs 2 --format json --quiet", false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["recommendation"].is_null());
  ASSERT_EQ(j["choices"].size(), 2u);
  size_t simulations = 0;
  for (const nlohmann::json& choice : j["choices"]) {
    EXPECT_TRUE(choice["chosen"].is_null());
    // Every point misses the microsecond TTFT: the closest is the one with the lowest p95 TTFT.
    double lowest = 1e300;
    std::string closest;
    for (const nlohmann::json& p : choice["points"]) {
      double ttft = p["targets"]["ttft_p95"]["mean"].get<double>();
      if (ttft < lowest) {
        lowest = ttft;
        closest = p["size"];
      }
      simulations += p["seeds"].size();
      EXPECT_FALSE(p["pass"].get<bool>());
      EXPECT_FALSE(p["targets"]["ttft_p95"]["met"].get<bool>());
      EXPECT_TRUE(p["ttft_parts_s"].contains("queue"));
      EXPECT_TRUE(p["ttft_parts_s"].contains("load_dram"));
    }
    EXPECT_EQ(choice["closest"], closest);
    // The bisection went to the menu's end, which was then run with both seeds.
    EXPECT_EQ(choice["points"].back()["size"], "64GiB");
    EXPECT_EQ(choice["points"].back()["seeds"].size(), 2u);
  }
  EXPECT_EQ(j["simulations"].get<size_t>(), simulations);
  EXPECT_EQ(j["plan"]["size"]["menu"].size(), 4u);

  testing::CliResult table = run_kvtier("plan " + plan("{ttft_p95: 1us}") + " --jobs 2");
  ASSERT_EQ(table.exit_code, 0) << table.out;
  EXPECT_NE(
      table.out.find("Verdict: no size on the menu meets every target for any choice. The closest point is"),
      std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("misses ttft_p95"), std::string::npos) << table.out;
}

TEST_F(Plan, AVariantOfTheScenarioAndTheLeastCostObjective) {
  std::string path = (root_ / "variant.yaml").string();
  write_text(path,
             "scenario: " + scenario_ +
                 "\nvariant: breakeven\nset: {workload.sessions: 3, cost: h200}\ntargets: {tpot_p95: 10s}\n"
                 "size:\n  key: cache.tiers[1].capacity\n  menu: [1GiB, 4GiB]\nobjective: least_cost\n");
  testing::CliResult r = run_shell("$KVTIER plan " + path + " --format json --quiet", false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["plan"]["variant"], "breakeven");
  EXPECT_EQ(j["recommendation"]["choice"], "as-is");
  EXPECT_EQ(j["recommendation"]["size"], "1GiB");
  // One seed (the scenario's): bisection alone, 1GiB passes at once.
  EXPECT_EQ(j["seeds"], nlohmann::json::array({1}));
  for (const nlohmann::json& p : j["choices"][0]["points"]) EXPECT_GT(p["usd_per_hour"].get<double>(), 0);
  testing::CliResult table = run_kvtier("plan " + path);
  ASSERT_EQ(table.exit_code, 0) << table.out;
  EXPECT_NE(table.out.find("variant breakeven"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("$/hour"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("Verdict: as-is with cache.tiers[1].capacity = 1GiB ($"), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("the cheapest"), std::string::npos) << table.out;
}

// A summary figure (a JSON pointer into the first variant's summary) of a fresh `kvtier simulate` of the
// scenario with these --set arguments, its mean over seeds 1 and 2; each run writes into `out`-SEED.
double fresh_mean(const std::string& scenario, const std::string& sets, const std::string& figure,
                  const std::string& out) {
  double sum = 0;
  for (const char* seed : {"1", "2"}) {
    testing::CliResult r = run_shell("$KVTIER simulate " + scenario + " " + sets + " --set seed=" + seed +
                                         " --no-plots --format json --out " + out + "-" + seed,
                                     false);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    sum += nlohmann::json::parse(r.out)["variants"][0]["summary"]
               .at(nlohmann::json::json_pointer(figure))
               .get<double>();
  }
  return sum / 2;
}

// The plan's answer, simulated afresh, meets its target, and the size below it on the menu does not.
TEST_F(Plan, TheAnswerMeetsItsTargetInAFreshSimulationAndTheSizeBelowDoesNot) {
  std::string path = (root_ / "hits.yaml").string();
  write_text(path, "scenario: " + scenario_ +
                       "\nset: {workload.sessions: 24, instance.hbm_utilisation: 0.3}\ntargets: {hit_rate: 0.8}\n"
                       "size:\n  key: cache.tiers[1].capacity\n  menu: [1GiB, 4GiB, 16GiB, 64GiB]\nseeds: 2\n");
  testing::CliResult r = run_shell("$KVTIER plan " + path + " --jobs 2 --format json --quiet", false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json choice = nlohmann::json::parse(r.out)["choices"][0];
  ASSERT_TRUE(choice["chosen"].is_string()) << r.out;
  ASSERT_TRUE(choice["binding"].is_string()) << r.out;  // the answer is not the menu's smallest size
  auto hit_rate = [&](const std::string& size) {
    return fresh_mean(scenario_,
                      "--set workload.sessions=24 --set instance.hbm_utilisation=0.3 --set "
                      "'cache.tiers[1].capacity=" +
                          size + "'",
                      "/hit_rate_total", (root_ / ("dram-" + size)).string());
  };
  EXPECT_GE(hit_rate(choice["chosen"].get<std::string>()), 0.8);
  EXPECT_LT(hit_rate(choice["binding"].get<std::string>()), 0.8);
}

// most_size: the largest number of sessions whose mean p95 TTFT over two seeds, simulated afresh, stays
// within the target, and the next larger entry on the menu does not.
TEST_F(Plan, MostSizeFindsTheLargestLoadThatMeetsItsTargetAndTheNextLargerDoesNot) {
  std::string path = (root_ / "sessions.yaml").string();
  write_text(path,
             "scenario: " + scenario_ +
                 "\nset: {instance.hbm_utilisation: 0.2}\ntargets: {ttft_p95: 2s}\n"
                 "size: {key: workload.sessions, menu: [1, 2, 4, 8, 16, 32, 64]}\nobjective: most_size\n"
                 "seeds: 2\n");
  testing::CliResult r = run_shell("$KVTIER plan " + path + " --jobs 2 --format json --quiet", false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json choice = nlohmann::json::parse(r.out)["choices"][0];
  ASSERT_TRUE(choice["chosen"].is_string()) << r.out;
  ASSERT_TRUE(choice["binding"].is_string()) << r.out;
  auto mean_p95 = [&](const std::string& sessions) {
    return fresh_mean(scenario_, "--set instance.hbm_utilisation=0.2 --set workload.sessions=" + sessions,
                      "/ttft_s/p95", (root_ / ("sessions-" + sessions)).string());
  };
  const int chosen = std::stoi(choice["chosen"].get<std::string>());
  const int binding = std::stoi(choice["binding"].get<std::string>());
  EXPECT_GT(binding, chosen);
  EXPECT_LE(mean_p95(std::to_string(chosen)), 2.0);
  EXPECT_GT(mean_p95(std::to_string(binding)), 2.0);
}

TEST_F(Plan, ABadPlanFileIsRefusedLocatedBeforeAnythingRuns) {
  testing::CliResult typo = run_kvtier("plan " + plan("{ttft_p95: 2s}", "objectiv: least_size\n"));
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.out.find("plan.yaml:13:1: objectiv: "), std::string::npos) << typo.out;
  EXPECT_EQ(typo.out.find("Bisection"), std::string::npos) << typo.out;
  // A choice's key that nothing reads names the plan file's line.
  std::string path = plan("{ttft_p95: 2s}");
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  text.replace(text.find("cache.tiers[1].kv: int4"), 23, "cache.tiers[1].kvv: int4");
  write_text(path, text);
  testing::CliResult unread = run_kvtier("plan " + path);
  EXPECT_EQ(unread.exit_code, 2);
  EXPECT_NE(unread.out.find("plan.yaml:8:25: choices.int4.cache.tiers[1].kvv"), std::string::npos)
      << unread.out;
  // least_cost without a cost file.
  testing::CliResult cost = run_kvtier("plan " + plan("{ttft_p95: 2s}", "objective: least_cost\n"));
  EXPECT_EQ(cost.exit_code, 2);
  EXPECT_NE(cost.out.find("plan.yaml:13:12: objective: least_cost needs the price"), std::string::npos)
      << cost.out;
  // A variant that the scenario does not have.
  testing::CliResult variant = run_kvtier("plan " + plan("{ttft_p95: 2s}", "variant: brekeven\n"));
  EXPECT_EQ(variant.exit_code, 2);
  EXPECT_NE(variant.out.find("plan.yaml:13:10: variant: expected a variant of"), std::string::npos)
      << variant.out;
  EXPECT_NE(variant.out.find("did you mean 'breakeven'?"), std::string::npos) << variant.out;
}

}  // namespace
}  // namespace kvtier
