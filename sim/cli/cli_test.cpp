// End-to-end checks of the kvtier binary: figures from the issue, JSON shape, exit codes on bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sim/cli/cli_test_support.h"

namespace kvtier {
namespace {

using testing::CliResult;
using testing::kTinyScenario;
using testing::run_kvtier;
using testing::run_shell;
using testing::write_temp;

TEST(Cli, KvJsonCarriesBytesAndCompression) {
  CliResult r = run_kvtier("kv --model minimax-m2.5 --kv turboquant4 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto layout = nlohmann::json::parse(r.out)[0]["layouts"][0];
  EXPECT_EQ(layout["bytes_per_token"], 79488);
  EXPECT_NEAR(layout["compression_vs_bf16"].get<double>(), 3.19, 0.005);
}

TEST(Cli, BreakevenAtFixedRate) {
  CliResult r =
      run_kvtier("breakeven --model llama-3.1-70b --prefill-tokens-per-s 18000 --kv bf16 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto point = nlohmann::json::parse(r.out)["layouts"][0]["points"][0];
  EXPECT_NEAR(point["breakeven_bytes_per_s"].get<double>() / 1e9, 5.90, 0.005);
}

TEST(Cli, BreakevenTableNamesTheWinner) {
  CliResult r = run_kvtier("breakeven --model llama-3.1-8b --hardware h200 --kv bf16 --context 32K");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("DRAM over PCIe: load wins by"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NVMe via DRAM: recompute wins by"), std::string::npos) << r.out;
}

TEST(Cli, MistypedKeyExitsTwoWithLocationAndSuggestion) {
  std::string path = write_temp("kvtier_cli_bad_card.yaml",
                                "name: m\nlayers: 2\nhidden_size: 8\nquery_heads: 1\n"
                                "attention: {kind: gqa, kv_heads: 1, head_dim: 8}\ntotal_parms: 1e9\n");
  CliResult r = run_kvtier("kv --model " + path + " --format json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "kvtier: " + path +
                       ":6:1: total_parms: unknown key 'total_parms' (did you mean 'total_params'?)\n");
}

TEST(Cli, MalformedYamlExitsTwoAndPrintsNoResult) {
  std::string path = write_temp("kvtier_cli_bad_yaml.yaml", "name: [m\nlayers: 2\n");
  CliResult r = run_kvtier("breakeven --model " + path + " --prefill-tokens-per-s 1000");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out.rfind("kvtier: " + path + ":", 0), 0u) << r.out;
  EXPECT_EQ(r.out.find("break-even"), std::string::npos) << r.out;
}

TEST(Cli, UnknownModelListsTheBuiltInOnes) {
  CliResult r = run_kvtier("kv --model llama-3.1-70 --kv bf16");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("did you mean 'llama-3.1-70b'?"), std::string::npos) << r.out;
}

TEST(Cli, BreakevenNeedsARateSource) {
  CliResult r = run_kvtier("breakeven --model llama-3.1-70b");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--hardware"), std::string::npos) << r.out;
}

const char* kMooncakeSample = "traces/mooncake-conversation-first2000.jsonl";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(Cli, TraceStatsAndHitrateAgreeOnTheMooncakeSample) {
  if (!std::filesystem::exists(kMooncakeSample)) FAIL() << kMooncakeSample << " is missing from the source root";
  CliResult stats = run_kvtier(std::string("trace stats ") + kMooncakeSample + " --format json");
  ASSERT_EQ(stats.exit_code, 0) << stats.out;
  auto s = nlohmann::json::parse(stats.out);
  EXPECT_EQ(s["requests"], 2000);
  EXPECT_EQ(s["blocks"], 54559);
  // 15,771 of 54,559 blocks repeat a prefix seen before (counted independently with a script).
  EXPECT_DOUBLE_EQ(s["max_prefix_hit_rate"]["blocks"].get<double>(), 15771.0 / 54559.0);
  CliResult hit = run_kvtier(std::string("hitrate --trace ") + kMooncakeSample +
                             " --model llama-3.1-8b --kv bf16 --capacity-tokens 1000000000 --format json");
  ASSERT_EQ(hit.exit_code, 0) << hit.out;
  EXPECT_EQ(nlohmann::json::parse(hit.out)["curves"][0]["points"][0]["hit_blocks"], 15771);
}

TEST(Cli, BadTraceLineNamesFileLineAndField) {
  std::string path =
      write_temp("kvtier_cli_bad_trace.jsonl",
                 "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n"
                 "{\"timestamp\": 5, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [-1]}\n");
  CliResult r = run_kvtier("trace stats " + path + " --trace-format mooncake");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find(path + ":2:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hash_ids"), std::string::npos) << r.out;
}

std::string small_scenario() {
  return write_temp(
      "kvtier_cli_small.yaml",
      "name: small\nmodel: llama-3.1-8b\nhardware: h200\n"
      "instance: {activation_reserve: 8GiB}\n"
      "cache:\n  block_tokens: 512\n  tiers:\n    - {medium: hbm, kv: bf16}\n"
      "    - {medium: dram, kv: bf16, capacity: 64GiB}\n"
      "workload: {loop: closed, source: agent, agent: agent-default, sessions: 4, duration: 2min}\n");
}

TEST(Cli, SimulateWritesIdenticalOutputsForTheSameInputs) {
  std::string scenario = small_scenario();
  std::filesystem::path base = std::filesystem::temp_directory_path();
  std::string a = (base / "kvtier_cli_sim_a").string(), b = (base / "kvtier_cli_sim_b").string();
  std::filesystem::remove_all(a);
  std::filesystem::remove_all(b);
  CliResult first = run_kvtier("simulate " + scenario + " --out " + a);
  ASSERT_EQ(first.exit_code, 0) << first.out;
  EXPECT_NE(first.out.find("TTFT p95"), std::string::npos) << first.out;
  // The plots take a second or more: the user is told, with the folder they will be in (not the hidden
  // one they are drawn into).
  EXPECT_NE(first.out.find("kvtier: drawing 4 plots in " + a + "/ ...\n"), std::string::npos) << first.out;
  for (const char* file : {"summary.json", "report.md", "run/requests.csv", "run/timeseries.csv",
                           "ttft_cdf.png", "ttft_parts.png", "hit_rate.png", "link_utilisation.png"}) {
    EXPECT_TRUE(std::filesystem::exists(a + "/" + file)) << file;
  }
  CliResult second = run_kvtier("simulate " + scenario + " --no-plots --out " + b);
  ASSERT_EQ(second.exit_code, 0) << second.out;
  EXPECT_EQ(second.out.find("drawing"), std::string::npos) << second.out;
  EXPECT_EQ(read_file(a + "/run/requests.csv"), read_file(b + "/run/requests.csv"));
  EXPECT_EQ(read_file(a + "/run/timeseries.csv"), read_file(b + "/run/timeseries.csv"));
}

// On a terminal (here `script`'s), each variant's progress has a line, ending with its wall time and peak
// memory; with --quiet, or with stderr not a terminal, there is none.
TEST(Cli, SimulateDrawsProgressOnATerminalUnlessQuiet) {
  const std::string scenario = write_temp("kvtier_cli_progress.yaml", kTinyScenario);
  const std::filesystem::path base = std::filesystem::temp_directory_path();
  auto on_terminal = [&](const std::string& name, const std::string& flags) {
    const std::string out = (base / name).string();
    std::filesystem::remove_all(out);
    return run_shell("script -qec \"$KVTIER simulate " + scenario + " --no-plots " + flags + " --out " + out +
                     "\" /dev/null");
  };
  CliResult shown = on_terminal("kvtier_cli_progress_shown", "");
  ASSERT_EQ(shown.exit_code, 0) << shown.out;
  for (const char* text :
       {"always-load: starting", "breakeven: starting", "always-load: done, ", "peak memory "})
    EXPECT_NE(shown.out.find(text), std::string::npos) << text << " in " << shown.out;
  CliResult quiet = on_terminal("kvtier_cli_progress_quiet", "--quiet");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.out;
  EXPECT_NE(quiet.out.find("TTFT p95"), std::string::npos) << quiet.out;
  EXPECT_EQ(quiet.out.find("starting"), std::string::npos) << quiet.out;
  EXPECT_EQ(quiet.out.find("done, "), std::string::npos) << quiet.out;
  const std::string piped = (base / "kvtier_cli_progress_piped").string();
  std::filesystem::remove_all(piped);
  CliResult not_terminal = run_kvtier("simulate " + scenario + " --no-plots --out " + piped);
  ASSERT_EQ(not_terminal.exit_code, 0) << not_terminal.out;
  EXPECT_EQ(not_terminal.out.find("starting"), std::string::npos) << not_terminal.out;
}

TEST(Cli, BadScenarioFailsAndWritesNothing) {
  std::string scenario = small_scenario();
  std::string out = (std::filesystem::temp_directory_path() / "kvtier_cli_sim_bad").string();
  std::filesystem::remove_all(out);
  CliResult r = run_kvtier("simulate " + scenario + " --set cache.tiers[1].policy=lur --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("did you mean 'lru'?"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace kvtier
