// The kvtier binary reading traces from pipes ("-" and process substitution) and refusing inputs that
// are not traces, each with the exit code and the located message a user sees.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "sim/cli/cli_test_support.h"

namespace kvtier {
namespace {

using testing::CliResult;
using testing::run_shell;

std::string write_temp(const std::string& name, const std::string& text) {
  return testing::write_temp("kvtier_cli_input_" + name, text);
}

// Twelve Mooncake requests, a second apart, sharing prefixes.
std::string mooncake_trace() {
  std::string text;
  for (int i = 0; i < 12; ++i) {
    text += "{\"timestamp\": " + std::to_string(1000 * i) +
            ", \"input_length\": " + std::to_string(200 + 60 * i) +
            ", \"output_length\": 8, \"hash_ids\": [1, " + std::to_string(2 + i % 3) + "]}\n";
  }
  return text;
}

nlohmann::json without_file(nlohmann::json stats) {
  stats.erase("file");
  return stats;
}

TEST(TraceInput, StatsFromStdinMatchStatsFromTheFile) {
  std::string path = write_temp("stats.jsonl", mooncake_trace());
  CliResult file = run_shell("$KVTIER trace stats " + path + " --format json");
  CliResult piped = run_shell("cat " + path + " | $KVTIER trace stats - --format json");
  ASSERT_EQ(file.exit_code, 0) << file.out;
  ASSERT_EQ(piped.exit_code, 0) << piped.out;
  nlohmann::json from_pipe = nlohmann::json::parse(piped.out);
  EXPECT_EQ(from_pipe["file"], "stdin");
  EXPECT_EQ(from_pipe["requests"], 12);
  EXPECT_EQ(without_file(from_pipe), without_file(nlohmann::json::parse(file.out)));
  CliResult substituted = run_shell("bash -c '$KVTIER trace stats <(cat " + path + ") --format json'");
  ASSERT_EQ(substituted.exit_code, 0) << substituted.out;
  EXPECT_EQ(without_file(nlohmann::json::parse(substituted.out)), without_file(from_pipe));
}

TEST(TraceInput, HitrateAndConvertReadStdin) {
  std::string path = write_temp("hitrate.jsonl", mooncake_trace());
  std::string args = " --model llama-3.1-8b --kv bf16 --capacity-tokens 100000 --format json";
  CliResult file = run_shell("$KVTIER hitrate --trace " + path + args);
  CliResult piped = run_shell("cat " + path + " | $KVTIER hitrate --trace -" + args);
  ASSERT_EQ(piped.exit_code, 0) << piped.out;
  nlohmann::json a = nlohmann::json::parse(file.out), b = nlohmann::json::parse(piped.out);
  EXPECT_EQ(a["curves"], b["curves"]);
  EXPECT_EQ(a["theoretical_max"], b["theoretical_max"]);
  std::string out = (std::filesystem::temp_directory_path() / "kvtier_cli_input_converted.jsonl").string();
  CliResult converted = run_shell("cat " + path + " | $KVTIER trace convert - " + out + " --to native");
  ASSERT_EQ(converted.exit_code, 0) << converted.out;
  EXPECT_NE(converted.out.find("wrote 12 requests"), std::string::npos) << converted.out;
}

TEST(TraceInput, SimulateReadsStdinOnceForEveryVariant) {
  std::string scenario = write_temp(
      "two-variants.yaml",
      "name: piped\nmodel: llama-3.1-8b\nhardware: h200\ninstance: {activation_reserve: 8GiB}\n"
      "cache:\n  block_tokens: 512\n  tiers:\n    - {medium: hbm, kv: bf16}\n"
      "    - {medium: dram, kv: bf16, capacity: 64GiB}\n"
      "workload: {loop: closed, source: agent, agent: agent-default, sessions: 1, duration: 1min}\n"
      "variants:\n  - {name: a}\n  - {name: b, set: {instance.max_batch_tokens: 4096}}\n");
  std::string path = write_temp("simulate.jsonl", mooncake_trace());
  std::string out = (std::filesystem::temp_directory_path() / "kvtier_cli_input_sim").string();
  std::filesystem::remove_all(out);  // an earlier run's folder would be refused without --force
  // stdout alone: a sanitizer build warns on stderr about SimGrid's stack switching in each child.
  CliResult r = run_shell("cat " + path + " | $KVTIER simulate " + scenario +
                              " --trace - --jobs 2 --no-plots --out " + out + " --format json",
                          /*with_stderr=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json result = nlohmann::json::parse(r.out);
  for (const auto& variant : result["variants"])
    EXPECT_EQ(variant["summary"]["requests_issued"], 12) << variant["name"];
}

TEST(TraceInput, SimulateReportsABadTraceAtItsLineBeforeForking) {
  std::string unsorted = write_temp("unsorted.jsonl", mooncake_trace() +
                                                          "{\"timestamp\": 500, \"input_length\": 10, "
                                                          "\"output_length\": 1, \"hash_ids\": [9]}\n");
  CliResult r = run_shell("$KVTIER simulate h200-llama8b --trace " + unsorted + " --no-plots --out " +
                          (std::filesystem::temp_directory_path() / "kvtier_cli_input_bad").string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find(unsorted + ":13: open-loop replay needs a trace sorted by time"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("Uncaught exception"), std::string::npos) << r.out;
  std::string no_input = write_temp("no-input.jsonl",
                                    "{\"timestamp\": 0, \"input_length\": 0, \"output_length\": 5, "
                                    "\"hash_ids\": []}\n");
  r = run_shell("$KVTIER simulate h200-llama8b --trace " + no_input + " --no-plots --out " +
                (std::filesystem::temp_directory_path() / "kvtier_cli_input_bad").string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find(no_input + ":1: field 'input_length'"), std::string::npos) << r.out;
}

TEST(TraceInput, BinaryInputIsRefusedAtOnce) {
  CliResult r = run_shell("timeout 20 $KVTIER trace stats /dev/zero");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out, "kvtier: /dev/zero:1: a NUL byte: this is a binary file, not a JSON-lines trace\n");
  r = run_shell("head -c 100000 /dev/zero | timeout 20 $KVTIER trace stats - --trace-format mooncake");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out, "kvtier: stdin:1: a NUL byte: this is a binary file, not a JSON-lines trace\n");
}

}  // namespace
}  // namespace kvtier
