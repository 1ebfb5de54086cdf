// Strict scenario reading: errors located at the key or at the override that gave the value, duplicate and
// unread keys, variants, and numbers out of range, each against a message written out by hand.
#include "sim/engine/scenario.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "sim/core/config_error_test_support.h"
#include "sim/core/calibration.h"
#include "sim/engine/workload.h"

namespace kvtier {
namespace {

using testing::error_of;

// Line 9 is `sessions`; the variants start at line 14.
const std::string kScenario =
    "name: t\n"                                                                    // 1
    "model: llama-3.1-8b\n"                                                        // 2
    "hardware: h200\n"                                                             // 3
    "instance: {gpus: 1, activation_reserve: 8GiB}\n"                              // 4
    "cache:\n"                                                                     // 5
    "  block_tokens: 512\n"                                                        // 6
    "  tiers: [{medium: hbm, kv: bf16}, {medium: dram, kv: bf16, capacity: 96GiB}]\n"  // 7
    "workload:\n"                                                                  // 8
    "  sessions: 4\n"                                                              // 9
    "  duration: 1min\n"                                                           // 10
    "  source: agent\n"                                                            // 11
    "  agent: agent-default\n"                                                     // 12
    "seed: 7\n";                                                                   // 13

const std::string kVariants =
    "variants:\n"                         // 14
    "  - name: a\n"                       // 15
    "  - name: b\n"                       // 16
    "    set: {workload.sessions: 8}\n";  // 17

ConfigNode scenario_file(const std::string& text = kScenario) {
  return ConfigNode::load_string(text, "s.yaml");
}

std::vector<ScenarioRun> plan(const std::string& text, const std::vector<std::string>& sets = {}) {
  std::vector<Override> overrides;
  for (const std::string& s : sets) overrides.push_back(parse_set_argument(s));
  return plan_runs(scenario_file(text), overrides);
}

std::string plan_error(const std::string& text, const std::vector<std::string>& sets = {}) {
  return error_of([&] { plan(text, sets); });
}

TEST(Scenario, PlansEachVariantWithItsOwnSet) {
  std::vector<ScenarioRun> runs = plan(kScenario + kVariants, {"workload.duration=2min"});
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].name, "a");
  EXPECT_EQ(runs[1].name, "b");
  EXPECT_EQ(runs[0].scenario.workload->integer("sessions"), 4);
  EXPECT_EQ(runs[1].scenario.workload->integer("sessions"), 8);
  EXPECT_EQ(runs[1].scenario.workload->quantity("duration", UnitKind::kDuration), 120.0);
  EXPECT_EQ(plan(kScenario)[0].name, "run");
}

TEST(Scenario, Tier0HoldsWhatTheInstanceLeavesInWholeBytes) {
  Scenario s = plan(kScenario)[0].scenario;
  // 0.9 of the H200's HBM less 8 GiB of activations less the weights; whole bytes, as the scenario
  // always sized it.
  double expected = s.hardware.gpu.hbm_capacity * 0.9 - 8.0 * (1 << 30) - s.model.weight_bytes();
  EXPECT_EQ(s.tiers[0].capacity_bytes, static_cast<int64_t>(std::nearbyint(expected)));
  EXPECT_EQ(s.tiers[1].capacity_bytes, int64_t{96} << 30);
}

TEST(Scenario, AnErrorInAKeyNamesItsLineAndColumn) {
  std::string text = kScenario;
  text.replace(text.find("gpus: 1"), 7, "gpus: 9");
  EXPECT_EQ(plan_error(text), "s.yaml:4:18: instance.gpus: expected 1 to 1 GPUs (the node's count)");
  text = kScenario;
  text.replace(text.find("capacity: 96GiB"), 15, "capacity: 96XB");
  EXPECT_EQ(plan_error(text).rfind("s.yaml:7:71: cache.tiers[1].capacity: unknown unit 'XB'", 0), 0u)
      << plan_error(text);
}

TEST(Scenario, AnErrorInASetValueNamesTheSetArgument) {
  EXPECT_EQ(plan_error(kScenario, {"cache.tiers[1].capacity=2XB"})
                .rfind("--set cache.tiers[1].capacity=2XB: unknown unit 'XB'", 0),
            0u);
  EXPECT_EQ(plan_error(kScenario, {"instance.gpus=3"}), "--set instance.gpus=3: expected 1 to 1 GPUs (the node's count)");
  EXPECT_EQ(plan_error(kScenario, {"workload.sessionz=3"}),
            "--set workload.sessionz=3: unknown key 'sessionz' (did you mean 'sessions'?)");
}

TEST(Scenario, AnErrorInAVariantsSetNamesItsPlaceInTheFile) {
  std::string text = kScenario + kVariants;
  text.replace(text.find("sessions: 8"), 11, "sessions: -8");
  EXPECT_EQ(plan_error(text),
            "s.yaml:17:30: variants[1].set.workload.sessions: expected a positive number of sessions in flight");
}

TEST(Scenario, DuplicateKeysAreErrors) {
  EXPECT_EQ(plan_error(kScenario + "seed: 8\n"), "s.yaml:14:1: seed: duplicate key 'seed' (first at line 13)");
  EXPECT_EQ(plan_error(kScenario, {"workload={sessions: 1, sessions: 2}"}),
            "--set workload={sessions: 1, sessions: 2}: workload.sessions: duplicate key 'sessions'");
}

TEST(Scenario, VariantNamesAreUniqueAndNonEmpty) {
  EXPECT_EQ(plan_error(kScenario + "variants:\n  - name: a\n  - name: a\n"),
            "s.yaml:16:11: variants[1].name: variant name 'a' is already the name of variants[0].name");
  EXPECT_EQ(plan_error(kScenario + "variants:\n  - name: ''\n"),
            "s.yaml:15:11: variants[0].name: expected a non-empty variant name");
  EXPECT_EQ(plan_error(kScenario + "variants:\n  - name: ../x\n"),
            "s.yaml:15:11: variants[0].name: expected a variant name usable as a folder name (no '/', not '.' "
            "or '..')");
}

TEST(Scenario, AnEmptyVariantListIsAnError) {
  EXPECT_EQ(plan_error(kScenario + "variants: []\n"),
            "s.yaml:14:11: variants: expected at least one variant (or no variants key for one run)");
  EXPECT_EQ(plan_error(kScenario + kVariants, {"variants=[]"}),
            "--set variants=[]: expected at least one variant (or no variants key for one run)");
}

TEST(Scenario, ASetKeyNothingReadsIsAnError) {
  EXPECT_EQ(plan_error(kScenario, {"workload.trace=/nonexistent.jsonl"}),
            "--set workload.trace=/nonexistent.jsonl: workload.trace is not read by this scenario (its workload "
            "is loop: closed, source: agent)");
  EXPECT_EQ(plan_error(kScenario, {"workload.requests=10"}),
            "--set workload.requests=10: workload.requests is not read by this scenario (its workload is loop: "
            "closed, source: agent)");
  EXPECT_EQ(plan_error(kScenario + kVariants, {"workload.rate=2"}),
            "--set workload.rate=2: workload.rate is not read by this scenario (its workload is loop: closed, "
            "source: agent) in any variant");
  // Read once the loop is open; a null (or empty) value removes a key and needs no reader.
  EXPECT_EQ(plan(kScenario, {"workload.loop=open", "workload.source=agent", "workload.requests=10",
                             "workload.sessions=null", "workload.rate=2"})
                .size(),
            1u);
  EXPECT_EQ(plan(kScenario, {"workload.loop=open", "workload.requests=10", "workload.sessions="}).size(), 1u);
}

TEST(Scenario, ASetThatEveryVariantReplacesIsAnError) {
  EXPECT_EQ(plan_error(kScenario + "variants:\n  - {name: a, set: {seed: 1}}\n", {"seed=3"}),
            "--set seed=3: seed is set again by s.yaml:15:27: variants[0].set.seed, so this value is never used");
  // One variant that keeps it is enough.
  EXPECT_EQ(plan(kScenario + "variants:\n  - {name: a, set: {seed: 1}}\n  - {name: b}\n", {"seed=3"}).size(), 2u);
}

TEST(Scenario, AVariantsSetKeyMustBeReadByItsRun) {
  EXPECT_EQ(plan_error(kScenario + "variants:\n  - {name: a, set: {workload.format: mooncake}}\n"),
            "s.yaml:15:38: variants[0].set.workload.format: workload.format is not read by this scenario (its "
            "workload is loop: closed, source: agent)");
}

TEST(Scenario, WorkloadNumbersAreCheckedWhereTheyAreGiven) {
  std::string text = kScenario;
  text.replace(text.find("sessions: 4"), 11, "sessions: -1");
  EXPECT_EQ(plan_error(text), "s.yaml:9:13: workload.sessions: expected a positive number of sessions in flight");
  EXPECT_EQ(plan_error(kScenario, {"workload.loop=open", "workload.sessions=null", "workload.requests=5",
                                   "workload.rate=0"}),
            "--set workload.rate=0: expected a positive multiple of the trace's rate");
  EXPECT_EQ(plan_error(kScenario, {"workload.format=csv", "workload.source=trace", "workload.trace=t.jsonl"}),
            "--set workload.format=csv: expected mooncake, bailian or native, got 'csv'");
}

TEST(Scenario, ScenarioNumbersAreCheckedWhereTheyAreGiven) {
  EXPECT_EQ(plan_error(kScenario, {"cache.block_tokens=2097152"}),
            "--set cache.block_tokens=2097152: expected a block size of 1 to 1048576 tokens");
  EXPECT_EQ(plan_error(kScenario, {"slo={ttft: 0s}"}), "--set slo={ttft: 0s}: slo.ttft: expected a positive duration");
  EXPECT_EQ(plan_error(kScenario, {"cache.tiers[1].capacity=1e30B"}).rfind("--set cache.tiers[1].capacity=1e30B: ", 0),
            0u);
}

TEST(Scenario, SeedsSpanAllOf64Bits) {
  EXPECT_EQ(plan(kScenario, {"seed=18446744073709551615"})[0].scenario.seed, 18446744073709551615u);
  EXPECT_EQ(plan_error(kScenario, {"seed=18446744073709551616"}),
            "--set seed=18446744073709551616: expected an integer from 0 to 18446744073709551615, got "
            "'18446744073709551616'");
}

TEST(Scenario, AMissingInstanceDefaultsToTheWholeNode) {
  std::string text = kScenario;
  text.erase(text.find("instance:"), text.find("cache:") - text.find("instance:"));
  Scenario s = plan(text)[0].scenario;
  EXPECT_EQ(s.gpus, s.hardware.gpu.count);
}

std::string with_tiers(const std::string& tiers) {
  std::string text = kScenario;
  size_t line = text.find("  tiers:");
  return text.replace(line, text.find('\n', line) - line, "  tiers: " + tiers);
}

TEST(Scenario, TwoTiersOnOneMediumAreRefusedBeforeTheRun) {
  EXPECT_EQ(plan_error(with_tiers("[{medium: hbm, kv: bf16}, {medium: dram, kv: bf16, capacity: 96GiB}, "
                                  "{medium: dram, name: dram2, kv: int4, capacity: 96GiB}]")),
            "s.yaml:7:88: cache.tiers[2].medium: tiers[1] is already the dram tier; the hardware has one dram, so "
            "one tier per medium");
}

TEST(Scenario, ARemoteTierOnAHostWithoutNetworkIsRefusedAtItsKey) {
  EXPECT_EQ(plan_error(with_tiers("[{medium: hbm, kv: bf16}, {medium: remote, kv: bf16, capacity: 96GiB}]")),
            "s.yaml:7:45: cache.tiers[1].medium: the hardware file 'H200 (kvtier calibration machine)' has no "
            "network (network.bandwidth), so there is no remote tier");
}

// Load paths are the instance's: the H200's DRAM over one PCIe link at 55.2 GB/s, its disk at 1.1 GB/s.
TEST(Scenario, EachLowerTierCarriesTheInstancesLoadPath) {
  Scenario s = plan(with_tiers("[{medium: hbm, kv: bf16}, {medium: dram, kv: bf16, capacity: 96GiB}, "
                               "{medium: nvme, name: disk, kv: bf16, capacity: 1TiB}]"))[0]
                   .scenario;
  ASSERT_EQ(s.tiers.size(), 3u);
  EXPECT_EQ(s.tiers[2].name, "disk");
  EXPECT_EQ(s.tiers[2].medium, Medium::kNvme);
  ASSERT_TRUE(s.tiers[1].load_path && s.tiers[2].load_path);
  EXPECT_DOUBLE_EQ(s.tiers[1].load_path->bandwidth, 55.2e9);
  EXPECT_DOUBLE_EQ(s.tiers[2].load_path->bandwidth, 1.1e9);
}

// A calibration that measured TurboQuant's kernels only: 2e12 bf16 B/s dequantizing, 3e12 quantizing.
std::string turboquant_only_calibration() {
  Calibration c;
  c.tool = "kvtier-hw calibrate";
  c.command = "kvtier-hw calibrate --out x.json";
  c.device = "test";
  c.reference_hardware = "H200 (kvtier calibration machine)";
  const Encoding turboquant{.kind = EncodingKind::kTurboQuant4};
  c.kernels.conversions = {{turboquant, Conversion::kDequantize, 2e12}, {turboquant, Conversion::kQuantize, 3e12}};
  std::string path = (std::filesystem::temp_directory_path() / "kvtier-scenario-test-calibration.json").string();
  std::ofstream(path) << nlohmann::json(c).dump(2);
  return path;
}

// Llama-3.1-8B: 4,096 bf16 B per token and layer; TurboQuant slots 8 heads × 136 B = 1,088 B. turboquant4
// keeps 4 of 32 layers bf16: 4 × 4,096 + 28 × 1,088 = 46,848 B per token, against 131,072 B in bf16.
// Converting a token's 28 TurboQuant layers takes 28 × 4,096 B / rate; the scheduler charges bytes read
// plus written, 46,848 + 131,072 = 177,920 B, so the rate is 177,920 / 114,688 × the kernel's. int4 was not
// measured: 70 % of the H200's 4.8 TB/s.
TEST(Scenario, EachTierConvertsAtItsEncodingsMeasuredRateElseTheEstimate) {
  std::string text = with_tiers("[{medium: hbm, kv: bf16}, {medium: dram, kv: turboquant4, capacity: 96GiB}, "
                                "{medium: nvme, kv: int4, capacity: 1TiB}]") +
                     "calibration: " + turboquant_only_calibration() + "\n";
  Scenario s = plan(text)[0].scenario;
  ASSERT_EQ(s.tier_conversions.size(), 3u);
  EXPECT_DOUBLE_EQ(s.tier_conversions[1].load_bytes_per_s, 177920.0 / 114688.0 * 2e12);
  EXPECT_DOUBLE_EQ(s.tier_conversions[1].store_bytes_per_s, 177920.0 / 114688.0 * 3e12);
  EXPECT_DOUBLE_EQ(s.tier_conversions[2].load_bytes_per_s, 0.7 * 4.8e12);
  EXPECT_DOUBLE_EQ(s.tier_conversions[2].store_bytes_per_s, 0.7 * 4.8e12);
}

}  // namespace
}  // namespace kvtier
