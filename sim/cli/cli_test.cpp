// End-to-end checks of the kvtier binary: figures from the issue, JSON shape, exit codes on bad input.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

namespace kvtier {
namespace {

struct CliResult {
  int exit_code;
  std::string out;  // stdout and stderr together
};

CliResult run_kvtier(const std::string& args) {
  std::string command = std::string(KVTIER_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string out;
  std::array<char, 4096> buffer;
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) out.append(buffer.data(), n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string write_temp(const std::string& name, const std::string& text) {
  std::filesystem::path path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(Cli, KvJsonCarriesBytesAndCompression) {
  CliResult r = run_kvtier("kv --model minimax-m2.5 --kv turboquant4 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto layout = nlohmann::json::parse(r.out)[0]["layouts"][0];
  EXPECT_EQ(layout["bytes_per_token"], 79488);
  EXPECT_NEAR(layout["compression_vs_bf16"].get<double>(), 3.19, 0.005);
}

TEST(Cli, BreakevenAtFixedRate) {
  CliResult r = run_kvtier("breakeven --model llama-3.1-70b --prefill-tokens-per-s 18000 --kv bf16 --format json");
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
  EXPECT_EQ(r.out, "kvtier: " + path + ":6:1: total_parms: unknown key 'total_parms' (did you mean 'total_params'?)\n");
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

}  // namespace
}  // namespace kvtier
