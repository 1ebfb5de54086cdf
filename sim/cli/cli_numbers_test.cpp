// Numbers on the command line and in the files it names: the checks of cli_numbers.h on an app built
// here, and the kvtier binary on inputs that used to overflow or turn into NaN and still exit 0.
#include "sim/core/cli_numbers.h"

#include <gtest/gtest.h>

#include <climits>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "sim/cli/cli_test_support.h"

#include "sim/cli/output.h"

namespace kvtier {
namespace {

// An app with one subcommand holding one option of each kind the checks tell apart.
struct TestApp {
  CLI::App app{"test"};
  int jobs = 1;
  double rate = 1;
  double scale = 1;
  uint64_t seed = 0;
  std::vector<int64_t> counts;
  std::string model;

  TestApp() {
    CLI::App* run = app.add_subcommand("run", "");
    run->add_option("--jobs", jobs)->check(CLI::PositiveNumber);
    run->add_option("--rate", rate)->check(CLI::PositiveNumber);
    run->add_option("--scale", scale);
    run->add_option("--seed", seed);
    run->add_option("--counts", counts)->delimiter(',')->check(CLI::NonNegativeNumber);
    run->add_option("--model", model);
    app.add_subcommand("simulate", "");
    check_numeric_options(app);
  }

  // "" when the arguments parse, else the usage message.
  std::string parse(std::vector<std::string> args) {
    args.insert(args.begin(), "test");
    std::vector<const char*> argv;
    for (const std::string& arg : args) argv.push_back(arg.c_str());
    try {
      app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::ParseError& e) {
      return usage_error_message(app, e);
    }
    return "";
  }
};

TEST(CliNumbers, RangeMessagesNameTheOptionAndTheValue) {
  EXPECT_EQ(TestApp().parse({"run", "--jobs", "0"}), "--jobs: expected a positive integer, got 0");
  EXPECT_EQ(TestApp().parse({"run", "--jobs", "-3"}), "--jobs: expected a positive integer, got -3");
  EXPECT_EQ(TestApp().parse({"run", "--jobs", "1.5"}), "--jobs: expected a positive integer, got 1.5");
  EXPECT_EQ(TestApp().parse({"run", "--counts", "4,-1"}),
            "--counts: expected a non-negative integer, got -1");
  EXPECT_EQ(TestApp().parse({"run", "--rate", "0"}), "--rate: expected a finite positive number, got 0");
  EXPECT_EQ(TestApp().parse({"run", "--seed", "-1"}), "--seed: expected a non-negative integer, got -1");
  // Fits int64_t but not the int behind --jobs.
  EXPECT_EQ(TestApp().parse({"run", "--jobs", "99999999999"}), "--jobs: 99999999999 is out of range");
}

TEST(CliNumbers, NanAndInfinityAreRefusedEverywhere) {
  for (std::string text : {"nan", "NaN", "inf", "-inf", "infinity", "1e400"}) {
    EXPECT_EQ(TestApp().parse({"run", "--rate", text}),
              "--rate: expected a finite positive number, got " + text);
    EXPECT_EQ(TestApp().parse({"run", "--scale", text}), "--scale: expected a finite number, got " + text);
  }
}

TEST(CliNumbers, ValuesInRangeParseAsBefore) {
  TestApp t;
  EXPECT_EQ(t.parse({"run", "--jobs", "4", "--rate", "1e-3", "--scale", "-2.5", "--seed",
                     "18446744073709551615", "--counts", "0,7"}),
            "");
  EXPECT_EQ(t.jobs, 4);
  EXPECT_DOUBLE_EQ(t.rate, 1e-3);
  EXPECT_DOUBLE_EQ(t.scale, -2.5);
  EXPECT_EQ(t.seed, UINT64_MAX);
  EXPECT_EQ(t.counts, (std::vector<int64_t>{0, 7}));
}

TEST(CliNumbers, HelpTextIsUnchanged) {
  TestApp checked;
  CLI::App plain{"test"};
  int jobs = 1;
  double rate = 1;
  double scale = 1;
  uint64_t seed = 0;
  std::vector<int64_t> counts;
  std::string model;
  CLI::App* run = plain.add_subcommand("run", "");
  run->add_option("--jobs", jobs)->check(CLI::PositiveNumber);
  run->add_option("--rate", rate)->check(CLI::PositiveNumber);
  run->add_option("--scale", scale);
  run->add_option("--seed", seed);
  run->add_option("--counts", counts)->delimiter(',')->check(CLI::NonNegativeNumber);
  run->add_option("--model", model);
  plain.add_subcommand("simulate", "");
  EXPECT_EQ(checked.app.get_subcommand("run")->help(), run->help());
}

TEST(CliNumbers, UnknownOptionsAndCommandsGetTheClosestName) {
  EXPECT_EQ(TestApp().parse({"run", "--modle", "x"}), "unknown option --modle (did you mean --model?)");
  EXPECT_EQ(TestApp().parse({"run", "--job=3"}), "unknown option --job (did you mean --jobs?)");
  EXPECT_EQ(TestApp().parse({"run", "--zzzzzz"}), "unknown option --zzzzzz");
  EXPECT_EQ(TestApp().parse({"simulat"}), "unknown command 'simulat' (did you mean simulate?)");
}

TEST(CliNumbers, WithCommasHandlesTheMostNegativeCount) {
  EXPECT_EQ(with_commas(LLONG_MIN), "-9,223,372,036,854,775,808");
  EXPECT_EQ(with_commas(LLONG_MAX), "9,223,372,036,854,775,807");
  EXPECT_EQ(with_commas(-1000), "-1,000");
}

// The kvtier binary.

using testing::CliResult;
using testing::run_kvtier;
using testing::write_temp;

// The first line of the output, where kvtier puts its one-line error.
std::string first_line(const std::string& out) {
  return out.substr(0, out.find('\n'));
}

std::string card_with(int layers, int kv_heads, int head_dim) {
  return "name: big\nlayers: " + std::to_string(layers) + "\nhidden_size: 4096\nquery_heads: 32\n" +
         "attention: {kind: gqa, kv_heads: " + std::to_string(kv_heads) +
         ", head_dim: " + std::to_string(head_dim) + "}\ntotal_params: 1e9\n";
}

// Two identical 1024-token requests (two 512-token blocks): the second hits both blocks.
std::string two_request_trace() {
  std::string line = R"({"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]})";
  return write_temp("kvtier_cli_numbers_trace.jsonl", line + "\n" + line + "\n");
}

TEST(CliNumbersBinary, UsageErrorsExitTwoWithPlainMessages) {
  CliResult r = run_kvtier("kv --model llama-3.1-8b --block-tokens 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out,
            "kvtier: --block-tokens: expected a positive integer, got 0\n"
            "Run 'kvtier kv --help' for its options.\n");
  r = run_kvtier("simulate --jobs 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(first_line(r.out), "kvtier: --jobs: expected a positive integer, got 0");
  r = run_kvtier("kv --modle llama-3.1-8b");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(first_line(r.out), "kvtier: unknown option --modle (did you mean --model?)");
  r = run_kvtier("simulat");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(first_line(r.out), "kvtier: unknown command 'simulat' (did you mean simulate?)");
  r = run_kvtier("");  // no command at all, or none under one that has subcommands: usage errors too
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(first_line(r.out), "kvtier: A subcommand is required");
  r = run_kvtier("trace");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("Run 'kvtier trace --help' for its options."), std::string::npos) << r.out;
  r = run_kvtier("kv --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--block-tokens N=256 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--format table|json "), std::string::npos) << r.out;
}

// --help speaks the user's terms: no CLI11 type names, validator names, enum maps or flag defaults.
TEST(CliNumbersBinary, HelpShowsNoCli11Internals) {
  for (std::string command : {"", "kv", "breakeven", "trace", "trace stats", "trace convert",
                              "trace generate", "hitrate", "simulate", "validate", "schema"}) {
    CliResult r = run_kvtier(command + " --help");
    EXPECT_EQ(r.exit_code, 0) << command;
    for (std::string internal :
         {"INT", "UINT", "FLOAT", "ENUM", "POSITIVE", "NONNEGATIVE", "{false}", "{true}", "->"}) {
      EXPECT_EQ(r.out.find(internal), std::string::npos) << command << ": " << internal << "\n" << r.out;
    }
  }
}

TEST(CliNumbersBinary, VersionPrintsTheProjectVersion) {
  CliResult r = run_kvtier("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, std::string("kvtier ") + KVTIER_VERSION + "\n");
}

// Token and block counts take K and M (1,024 and 1,048,576) wherever a command reads one.
TEST(CliNumbersBinary, TokenCountsTakeSizeSuffixes) {
  const std::string hitrate =
      "hitrate --trace traces/mooncake-conversation-first2000.jsonl --model llama-3.1-8b"
      " --format json ";
  CliResult suffixed = run_kvtier(hitrate + "--capacity-tokens 100K,1M --block-tokens 1K");
  CliResult plain = run_kvtier(hitrate + "--capacity-tokens 102400,1048576 --block-tokens 1024");
  ASSERT_EQ(suffixed.exit_code, 0) << suffixed.out;
  EXPECT_EQ(suffixed.out, plain.out);
  CliResult kv = run_kvtier("kv --model llama-3.1-8b --kv bf16 --block-tokens 1K --format json");
  ASSERT_EQ(kv.exit_code, 0) << kv.out;
  EXPECT_EQ(nlohmann::json::parse(kv.out)[0]["layouts"][0]["block_tokens"], 1024) << kv.out;
  CliResult bad = run_kvtier(hitrate + "--capacity-tokens 100X");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(first_line(bad.out),
            "kvtier: --capacity-tokens: expected a positive token count such as 4096 or 32K, got '100X'");
}

TEST(CliNumbersBinary, NanPrefillRateIsRefused) {
  for (std::string rate : {"nan", "inf"}) {
    CliResult r = run_kvtier("breakeven --model llama-3.1-8b --kv bf16 --prefill-tokens-per-s " + rate);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_EQ(first_line(r.out),
              "kvtier: --prefill-tokens-per-s: expected a finite positive number, got " + rate);
  }
}

TEST(CliNumbersBinary, ModelCardBeyondOneGiBPerTokenIsAConfigError) {
  // 2 × 16777216 × 16777216 elements × 2 B per layer: 2^50 B per layer, 2^51 over two layers.
  std::string path = write_temp("kvtier_cli_huge_card.yaml", card_with(2, 16777216, 16777216));
  CliResult r = run_kvtier("kv --model " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "kvtier: " + path +
                       ":5:12: attention: the KV of one token would take 2251799813685248 B in bf16 over 2 "
                       "layers; the limit is 1073741824 B (1 GiB) per token\n");
  // 2 × 16777216 × 16777216 × 2 B × 16777216 layers is 2^74 B: beyond int64_t, said so.
  path = write_temp("kvtier_cli_huger_card.yaml", card_with(16777216, 16777216, 16777216));
  r = run_kvtier("kv --model " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("would take more than 2^63 B in bf16"), std::string::npos) << r.out;
}

TEST(CliNumbersBinary, ModelCardAtOneGiBPerTokenIsAccepted) {
  // 2 × 4096 × 4096 × 2 B = 64 MiB per layer; 16 layers make exactly 1 GiB per token, 17 one layer more.
  std::string path = write_temp("kvtier_cli_gib_card.yaml", card_with(16, 4096, 4096));
  CliResult r = run_kvtier("kv --model " + path + " --kv bf16 --block-tokens 4 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto layout = nlohmann::json::parse(r.out)[0]["layouts"][0];
  EXPECT_EQ(layout["bytes_per_token"], 1073741824);
  EXPECT_EQ(layout["bytes_per_block"], 4294967296);
  path = write_temp("kvtier_cli_gib_card17.yaml", card_with(17, 4096, 4096));
  EXPECT_EQ(run_kvtier("kv --model " + path + " --kv bf16").exit_code, 2);
}

TEST(CliNumbersBinary, BlockOfTooManyTokensIsRefused) {
  // 131,072 B/token × 2^47 tokens = 2^64 B.
  CliResult r = run_kvtier("kv --model llama-3.1-8b --kv bf16 --block-tokens 140737488355328");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(first_line(r.out),
            "kvtier: KV layout bf16: a block of 140737488355328 tokens at 131072 B per token exceeds "
            "9223372036854775807 B");
  // 2^46 tokens make 2^63 B, one byte too many as well; 2^45 make 2^62 B.
  EXPECT_EQ(run_kvtier("kv --model llama-3.1-8b --kv bf16 --block-tokens 70368744177664").exit_code, 2);
  r = run_kvtier("kv --model llama-3.1-8b --kv bf16 --block-tokens 35184372088832 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)[0]["layouts"][0]["bytes_per_block"], int64_t{1} << 62);
}

TEST(CliNumbersBinary, BreakevenTokenCountsThatOverflowAreRefused) {
  CliResult r = run_kvtier(
      "breakeven --model llama-3.1-8b --kv bf16 --prefill-tokens-per-s 1000 "
      "--context 9007199254740992K");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(first_line(r.out),
            "kvtier: --context: '9007199254740992K' is more than 9223372036854775807 tokens");
  r = run_kvtier(
      "breakeven --model llama-3.1-8b --kv bf16 --prefill-tokens-per-s 1000 --context 4K "
      "--new-tokens 9223372036854775807");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(first_line(r.out),
            "kvtier: break-even: a prefix of 4096 tokens plus 9223372036854775807 new ones exceeds "
            "9223372036854775807 tokens");
}

TEST(CliNumbersBinary, HitrateCapacityBeyondInt64IsRefused) {
  std::string trace = two_request_trace();
  CliResult r = run_kvtier("hitrate --trace " + trace + " --model llama-3.1-8b --capacity 1e30B");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(
      first_line(r.out),
      "kvtier: --capacity: 1e30B is more than 9223372036854775807 B (8 EiB), the largest capacity kvtier "
      "counts");
  // bf16 blocks of 512 tokens are 131,072 × 512 = 67,108,864 B: 2^40 of them are 2^66 B.
  r = run_kvtier("hitrate --trace " + trace + " --model llama-3.1-8b --capacity-blocks 1099511627776");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(first_line(r.out),
            "kvtier: --capacity-blocks: 1099511627776 is 1099511627776 blocks of 67108864 B, more than "
            "9223372036854775807 B (8 EiB), the largest capacity kvtier counts");
}

TEST(CliNumbersBinary, HitrateCapacityJustBelowTheLimitCounts) {
  // 8e18 B / 67,108,864 B per block = 119,209,289,550.8 blocks; the second request hits both blocks.
  CliResult r = run_kvtier("hitrate --trace " + two_request_trace() +
                           " --model llama-3.1-8b --capacity 8000PB --policy lru,lfu --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json out = nlohmann::json::parse(r.out);
  for (const auto& curve : out["curves"]) {
    const auto& point = curve["points"][0];
    EXPECT_EQ(point["capacity_blocks"], 119209289550);
    EXPECT_EQ(point["capacity_bytes"], int64_t{119209289550} * 67108864);
    EXPECT_EQ(point["hit_tokens"], 1024);
  }
}

TEST(CliNumbersBinary, TierCapacityBeyondInt64IsAConfigError) {
  std::string tiers = write_temp("kvtier_cli_huge_tiers.yaml",
                                 "tiers:\n  - {medium: hbm, capacity: 1GiB, kv: bf16}\n"
                                 "  - {medium: dram, capacity: 1e20B, kv: int4, placement: exclusive}\n");
  CliResult r =
      run_kvtier("hitrate --trace " + two_request_trace() + " --model llama-3.1-8b --tiers " + tiers);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out.rfind("kvtier: " + tiers + ":3:30: tiers[1].capacity: ", 0), 0u) << r.out;
}

TEST(CliNumbersBinary, TierCapacityBelowTheLimitCountsBlocks) {
  // int4 (group 32, fp16 scale and zero) of Llama-3.1-8B: 64 + 4 × 2 × 2 = 80 B per head vector,
  // × 2 × 8 heads × 32 layers = 40,960 B/token, 20,971,520 B per 512-token block; 8e18 B hold
  // 381,469,726,562 of them. A 1 GiB bf16 HBM tier holds 16 blocks of 64 MiB.
  std::string tiers = write_temp("kvtier_cli_big_tiers.yaml",
                                 "tiers:\n  - {medium: hbm, capacity: 1GiB, kv: bf16}\n"
                                 "  - {medium: dram, capacity: 8000PB, kv: int4, placement: exclusive}\n");
  CliResult r = run_kvtier("hitrate --trace " + two_request_trace() + " --model llama-3.1-8b --tiers " +
                           tiers + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json out = nlohmann::json::parse(r.out);
  const auto& run = out["runs"][0];
  EXPECT_EQ(run["tiers"][0]["capacity_blocks"], 16);
  EXPECT_EQ(run["tiers"][1]["capacity_blocks"], 381469726562);
  EXPECT_EQ(run["hit_tokens"], 1024);
}

// The built-in LMCache example as the tier file: the trace's 512-token blocks are re-blocked to its
// chunk_size, 256, and Llama-3.1-8B's 32 MiB bf16 chunks fill 10 GiB of HBM with 320, LMCache's 20 GB
// (20 x 2^30 B) of CPU buffer with 640 and 100 GB of disk with 3,200. The second request hits its four
// blocks in HBM.
TEST(CliNumbersBinary, HitrateReadsAnLmcacheConfiguration) {
  CliResult r = run_kvtier("hitrate --trace " + two_request_trace() +
                           " --model llama-3.1-8b --tiers lmcache-example --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["trace"]["block_tokens"], 256);
  const auto& run = out["runs"][0];
  ASSERT_EQ(run["tiers"].size(), 3u);
  EXPECT_EQ(run["tiers"][0]["name"], "hbm");
  EXPECT_EQ(run["tiers"][1]["name"], "dram");
  EXPECT_EQ(run["tiers"][2]["name"], "nvme");
  EXPECT_EQ(run["tiers"][0]["capacity_blocks"], 320);
  EXPECT_EQ(run["tiers"][1]["capacity_bytes"], int64_t{20} << 30);
  EXPECT_EQ(run["tiers"][1]["capacity_blocks"], 640);
  EXPECT_EQ(run["tiers"][2]["capacity_blocks"], 3200);
  EXPECT_EQ(run["hit_tokens"], 1024);

  r = run_kvtier("hitrate --trace " + two_request_trace() +
                 " --model llama-3.1-8b --tiers lmcache-example --block-tokens 512");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(
      first_line(r.out),
      "kvtier: configs/tiers/lmcache-example.yaml (built in):5:13: chunk_size: LMCache stores chunks of 256 "
      "tokens, and kvtier has one block size for every tier, but the blocks here are 512 tokens; leave "
      "--block-tokens out (the chunk size is then the block size) or give --block-tokens 256");
}

}  // namespace
}  // namespace kvtier
