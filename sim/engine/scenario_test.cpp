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
  Scenario s =
      plan(with_tiers("[{medium: hbm, kv: bf16}, {medium: dram, kv: bf16, capacity: 96GiB}, "
                      "{medium: nvme, name: disk, kv: bf16, capacity: 48GiB}]"))[0]
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
  std::string text = with_tiers(
                         "[{medium: hbm, kv: bf16}, {medium: dram, kv: turboquant4, capacity: 96GiB}, "
                         "{medium: nvme, kv: int4, capacity: 48GiB}]") +
                     "calibration: " + turboquant_only_calibration() + "\n";
  Scenario s = plan(text)[0].scenario;
  ASSERT_EQ(s.tier_conversions.size(), 3u);
  EXPECT_DOUBLE_EQ(s.tier_conversions[1].load_bytes_per_s, 177920.0 / 114688.0 * 2e12);
  EXPECT_DOUBLE_EQ(s.tier_conversions[1].store_bytes_per_s, 177920.0 / 114688.0 * 3e12);
  EXPECT_DOUBLE_EQ(s.tier_conversions[2].load_bytes_per_s, 0.7 * 4.8e12);
  EXPECT_DOUBLE_EQ(s.tier_conversions[2].store_bytes_per_s, 0.7 * 4.8e12);
}

// Its efficiencies are fractions of the H200 card's peaks: over the H100 card's they stand for other rates.
TEST(Scenario, ACalibrationAgainstAnotherCardsPeaksIsWarnedOf) {
  const std::string on_h200 = kScenario + "calibration: " + turboquant_only_calibration() + "\n";
  EXPECT_TRUE(plan(on_h200)[0].scenario.warnings.empty());
  std::string on_h100 = on_h200;
  on_h100.replace(on_h100.find("hardware: h200"), 14, "hardware: h100-sxm");
  const std::vector<std::string> warnings = plan(on_h100)[0].scenario.warnings;
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("fractions of the peaks of 'H200 (kvtier calibration machine)', laid over those "
                             "of '8x H100 SXM (DGX H100 class)'"),
            std::string::npos)
      << warnings[0];
}

// The scenario with line 4, the instance, replaced.
std::string with_instance(const std::string& instance, std::string text = kScenario) {
  size_t line = text.find("instance:");
  return text.replace(line, text.find('\n', line) - line, instance);
}

Scenario first_scenario(const std::string& text) {
  return plan(text)[0].scenario;
}

// vLLM's engine arguments, as EngineArgs spells them and as its command line does, set kvtier's keys.
TEST(Scenario, VllmEngineArgumentsSetTheInstance) {
  Scenario s =
      first_scenario(with_instance("instance: {tensor_parallel_size: 1, gpu_memory_utilization: 0.8, "
                                   "max_num_batched_tokens: 4096, max_num_seqs: 64, "
                                   "activation_reserve: 8GiB}"));
  EXPECT_EQ(s.gpus, 1);
  EXPECT_EQ(s.hbm_utilisation, 0.8);
  EXPECT_EQ(s.max_batch_tokens, 4096);
  EXPECT_EQ(s.max_running, 64);
  double expected = s.hardware.gpu.hbm_capacity * 0.8 - 8.0 * (1 << 30) - s.model.weight_bytes();
  EXPECT_EQ(s.tiers[0].capacity_bytes, static_cast<int64_t>(std::nearbyint(expected)));

  s =
      first_scenario(with_instance("instance: {tensor-parallel-size: 1, gpu-memory-utilization: 0.85, "
                                   "max-num-batched-tokens: 2048, max-num-seqs: 32}"));
  EXPECT_EQ(s.gpus, 1);
  EXPECT_EQ(s.hbm_utilisation, 0.85);
  EXPECT_EQ(s.max_batch_tokens, 2048);
  EXPECT_EQ(s.max_running, 32);
}

// block_size is cache.block_tokens for every tier: Llama-3.1-8B's 131,072 bf16 bytes per token make a
// 16-token block 2 MiB.
TEST(Scenario, VllmBlockSizeIsTheCachesBlockSize) {
  std::string text = with_instance("instance: {gpus: 1, block_size: 16}");
  text.erase(text.find("  block_tokens: 512\n"), 19);
  Scenario s = plan(text)[0].scenario;
  EXPECT_EQ(s.block_tokens, 16);
  EXPECT_EQ(s.tiers[0].bytes_per_block(), 2097152);
  EXPECT_EQ(s.tiers[1].bytes_per_block(), 2097152);
  text.replace(text.find("block_size"), 10, "block-size");
  EXPECT_EQ(plan(text)[0].scenario.block_tokens, 16);
}

// Token counts in a scenario take K and M, as on the command line.
TEST(Scenario, TokenCountsTakeSizeSuffixes) {
  std::string text = with_instance("instance: {gpus: 1, max_batch_tokens: 8K}");
  text.replace(text.find("  block_tokens: 512\n"), 19, "  block_tokens: 1K\n");
  Scenario s = plan(text)[0].scenario;
  EXPECT_EQ(s.max_batch_tokens, 8192);
  EXPECT_EQ(s.block_tokens, 1024);
}

// kv_cache_dtype is the GPU cache's KV, tier 0's; the tiers below keep their own kv. fp8 halves
// Llama-3.1-8B's 131,072 bytes per token.
TEST(Scenario, VllmKvCacheDtypeIsTier0sKv) {
  const std::string tiers = "[{medium: hbm}, {medium: dram, kv: bf16, capacity: 96GiB}]";
  for (const char* dtype : {"fp8", "fp8_e4m3", "fp8_e5m2"}) {
    Scenario s = first_scenario(
        with_instance(std::string("instance: {gpus: 1, kv_cache_dtype: ") + dtype + "}", with_tiers(tiers)));
    EXPECT_EQ(s.tiers[0].layout.name, "fp8") << dtype;
    EXPECT_EQ(s.tiers[0].layout.bytes_per_token(), 65536) << dtype;
    EXPECT_EQ(s.tiers[1].layout.bytes_per_token(), 131072) << dtype;
  }
  for (const char* dtype : {"auto", "bfloat16", "float16"}) {
    Scenario s = first_scenario(
        with_instance(std::string("instance: {gpus: 1, kv-cache-dtype: ") + dtype + "}", with_tiers(tiers)));
    EXPECT_EQ(s.tiers[0].layout.name, "bf16") << dtype;
    EXPECT_EQ(s.tiers[0].layout.bytes_per_token(), 131072) << dtype;
  }
  EXPECT_EQ(
      plan_error(with_instance("instance: {gpus: 1, kv-cache-dtype: int8}", with_tiers(tiers))),
      "s.yaml:4:37: instance.kv-cache-dtype: expected a kv_cache_dtype kvtier has a layout for: auto, "
      "bfloat16 or float16 (bf16), fp8, fp8_e4m3 or fp8_e5m2 (fp8); got 'int8' (fp8_inc, fp8_ds_mla and "
      "int8 have none)");
  EXPECT_EQ(plan_error(with_tiers(tiers)), "s.yaml:7:11: cache.tiers[0]: missing required key 'kv'");
}

// One setting under two names is an error naming both, whichever names they are.
TEST(Scenario, ASettingUnderTwoNamesIsAnError) {
  EXPECT_EQ(
      plan_error(with_instance("instance: {gpus: 1, tensor_parallel_size: 1}")),
      "s.yaml:4:43: instance.tensor_parallel_size: the same setting as instance.gpus (s.yaml:4:18); give "
      "one of them");
  EXPECT_EQ(plan_error(with_instance("instance: {hbm_utilisation: 0.8, gpu-memory-utilization: 0.8}")),
            "s.yaml:4:58: instance.gpu-memory-utilization: the same setting as instance.hbm_utilisation "
            "(s.yaml:4:29); give one of them");
  EXPECT_EQ(
      plan_error(with_instance("instance: {gpu_memory_utilization: 0.8, gpu-memory-utilization: 0.8}")),
      "s.yaml:4:65: instance.gpu-memory-utilization: the same setting as instance.gpu_memory_utilization "
      "(s.yaml:4:36); give one of them");
  EXPECT_EQ(plan_error(with_instance("instance: {max_batch_tokens: 4096, max_num_batched_tokens: 4096}")),
            "s.yaml:4:60: instance.max_num_batched_tokens: the same setting as instance.max_batch_tokens "
            "(s.yaml:4:30); give one of them");
  EXPECT_EQ(
      plan_error(with_instance("instance: {max_running: 8, max-num-seqs: 8}")),
      "s.yaml:4:42: instance.max-num-seqs: the same setting as instance.max_running (s.yaml:4:25); give one "
      "of them");
  EXPECT_EQ(
      plan_error(with_instance("instance: {gpus: 1, block_size: 16}")),
      "s.yaml:4:33: instance.block_size: the same setting as cache.block_tokens (s.yaml:6:17); give one of "
      "them");
  EXPECT_EQ(
      plan_error(with_instance("instance: {gpus: 1, kv_cache_dtype: fp8}")),
      "s.yaml:4:37: instance.kv_cache_dtype: the same setting as cache.tiers[0].kv (s.yaml:7:29); give one "
      "of them");
  // A --set of kvtier's name meets the file's vLLM name.
  EXPECT_EQ(
      plan_error(with_instance("instance: {gpus: 1, gpu_memory_utilization: 0.8}"),
                 {"instance.hbm_utilisation=0.5"}),
      "s.yaml:4:45: instance.gpu_memory_utilization: the same setting as instance.hbm_utilisation (--set "
      "instance.hbm_utilisation=0.5); give one of them");
}

TEST(Scenario, VllmNamesAreCheckedWhereTheyAreGiven) {
  EXPECT_EQ(plan_error(with_instance("instance: {gpus: 1, gpu_memory_utilization: 1.5}")),
            "s.yaml:4:45: instance.gpu_memory_utilization: expected a fraction in (0, 1]");
  EXPECT_EQ(plan_error(with_instance("instance: {tensor-parallel-size: 2}")),
            "s.yaml:4:34: instance.tensor-parallel-size: expected 1 to 1 GPUs (the node's count)");
  EXPECT_EQ(plan_error(with_instance("instance: {max_num_seqs: 0}")),
            "s.yaml:4:26: instance.max_num_seqs: expected a positive number of sequences");
  EXPECT_EQ(plan_error(with_instance("instance: {max_num_seq: 8}")),
            "s.yaml:4:12: instance.max_num_seq: unknown key 'max_num_seq' (did you mean 'max_num_seqs'?)");
}

}  // namespace
}  // namespace kvtier
