// The serving simulation against independent expectations: the analytic cache replay, the cache's own
// event totals, a TTFT computed by hand, and bad scenarios failing before anything runs.
#include "sim/engine/simulation.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/engine/isolated_run.h"
#include "sim/cache/tiered_cache.h"
#include "sim/engine/workload.h"

namespace kvtier {
namespace {

std::string temp_file(const std::string& name, const std::string& text) {
  std::filesystem::path path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
  return cells;
}

// One column of a CSV file with a header row.
std::vector<double> csv_column(const std::string& path, const std::string& name) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header = split(line);
  size_t column = std::find(header.begin(), header.end(), name) - header.begin();
  std::vector<double> values;
  while (std::getline(in, line)) values.push_back(std::stod(split(line).at(column)));
  return values;
}

Scenario scenario_from(const std::string& yaml) {
  return parse_scenario(ConfigNode::load_string(yaml, "test.yaml"));
}

nlohmann::json run(const Scenario& s, bool free_transfers = false, const std::string& out = "") {
  SimulationOptions options;
  options.out_dir = out;
  options.free_transfers = free_transfers;
  return run_isolated([&] { return simulate(s, options); });
}

// Llama-3.1-8B alone on one H100 of the SXM node: 80 GB less `reserve` less 16.06 GB of weights is left
// for KV, in blocks of 512 tokens × 128 KiB (64 MiB).
std::string one_gpu_scenario(const std::string& workload, const std::string& reserve = "40GB",
                             const std::string& extra_tiers = "") {
  return "name: t\nmodel: llama-3.1-8b\nhardware: h100-sxm\n"
         "instance: {gpus: 1, hbm_utilisation: 1.0, activation_reserve: " +
         reserve +
         "}\n"
         "cache:\n  block_tokens: 512\n  tiers:\n    - {medium: hbm, kv: bf16}\n"
         "    - {medium: dram, kv: bf16, capacity: 1TiB}\n" +
         extra_tiers + "workload: " + workload + "\n";
}

std::string mooncake_line(int ms, int input, int first_id, int blocks, int extra_id = -1) {
  std::string ids;
  for (int b = 0; b < blocks; ++b) ids += (b ? ", " : "") + std::to_string(first_id + b);
  if (extra_id >= 0) ids += ", " + std::to_string(extra_id);
  return "{\"timestamp\": " + std::to_string(ms) + ", \"input_length\": " + std::to_string(input) +
         ", \"output_length\": 1, \"hash_ids\": [" + ids + "]}\n";
}

// Prefill FLOPs of Llama-3.1-8B for `n` new tokens after `cached`, over the H200's or H100's 989 TFLOP/s × 0.57.
double prefill_by_hand(double cached, double n) {
  double flops = 2 * 8.03e9 * n + 2.0 * 32 * 256 * 32 * (n * cached + n * (n + 1) / 2);
  return flops / (989e12 * 0.57);
}

TEST(Simulation, TtftOfADramHitIsLoadPlusPrefillByHand) {
  // A (16 blocks), then B (20 blocks) evicts A's last 6 blocks to DRAM (30 fit), then C = A + 1 block.
  std::string trace = temp_file("kvtier_sim_ttft.jsonl", mooncake_line(0, 16 * 512, 1, 16) +
                                                             mooncake_line(100000, 20 * 512, 100, 20) +
                                                             mooncake_line(200000, 17 * 512, 1, 16, 17));
  // 80 − 61.92 − 16.06 = 2.02 GB: 30 blocks.
  Scenario s =
      scenario_from(one_gpu_scenario("{loop: open, source: trace, trace: " + trace + "}", "61.92GB"));
  ASSERT_EQ(s.tiers[0].capacity_blocks(), 30);
  std::string out = (std::filesystem::temp_directory_path() / "kvtier_sim_ttft").string();
  nlohmann::json summary = run(s, false, out);
  ASSERT_EQ(summary["requests_completed"], 3);

  double ttft = csv_column(out + "/requests.csv", "ttft_s")[2];
  // Load: 6 blocks × 64 MiB over PCIe (55 GB/s, 2.8 us); DRAM (600 GB/s) is not the bottleneck.
  double load = 2.8e-6 + 6.0 * 512 * 131072 / 55e9;
  // Prefill of the last 512 tokens after 8,192 cached: linear 2 × 8.03e9 per token, attention
  // 2 × 32 heads × 256 × 32 layers per (query, key) pair.
  EXPECT_NEAR(ttft, load + prefill_by_hand(8192, 512), 1e-6);
}

// C's load reads from DRAM and from NVMe at once, and nothing else is left to do: the run waits for the
// NVMe part after the DRAM part has landed, and must move on (a wait that held the landed copy returned at
// once, forever, on the same clock).
TEST(Simulation, ALoadFromTwoTiersIsWaitedForToItsEnd) {
  std::string trace = temp_file("kvtier_sim_two_tiers.jsonl", mooncake_line(0, 16 * 512, 1, 16) +
                                                                  mooncake_line(100000, 20 * 512, 100, 20) +
                                                                  mooncake_line(200000, 17 * 512, 1, 16, 17));
  std::string yaml = one_gpu_scenario("{loop: open, source: trace, trace: " + trace + "}", "61.92GB",
                                      "    - {medium: nvme, kv: bf16, capacity: 1TiB}\n");
  yaml.replace(yaml.find("capacity: 1TiB"), 14, "capacity: 256MiB");  // DRAM: 4 blocks
  nlohmann::json summary = run(scenario_from(yaml));
  ASSERT_EQ(summary["requests_completed"], 3);
  // C finds 10 blocks in HBM and the 6 evicted ones split between DRAM (the 4 it holds) and NVMe.
  const nlohmann::json& hits = summary["hit_rate_tokens"];
  EXPECT_EQ(hits[1]["tokens"], 4 * 512);
  EXPECT_EQ(hits[2]["tokens"], 2 * 512);
}

// A calibration of Llama-3.1-8B's serving terms, with `power` where given.
std::string serving_calibration(const std::string& name, const std::string& power) {
  const std::string serving = R"("model": "Llama-3.1-8B", "step_overhead_s": 0.001, "linear_mfu": 0.8,
    "attention_mfu": 0.5, "attention_half_rate_keys": 0, "attention_half_rate_queries": 0,
    "attention_bandwidth_efficiency": 0.8)";
  return temp_file(name, R"({"hardware": {}, "serving": {)" + serving +
                             (power.empty() ? "" : ", \"power\": " + power) + "}}");
}

// One request of 32K tokens prefills in four back-to-back chunks of 8K, every one compute-bound: with a
// throttle of 0.3 s onset and 1.25x, its TTFT is the first 0.3 s of work at the boost clock and the rest
// 1.25 times slower; a second request a minute later starts cool again.
TEST(Simulation, BackToBackPrefillsSlowDownAfterTheThrottlesOnset) {
  std::string trace = temp_file("kvtier_sim_throttle.jsonl",
                                mooncake_line(0, 32768, 1, 64) + mooncake_line(60000, 32768, 1000, 64));
  auto scenario = [&](const std::string& power) {
    return scenario_from(
        one_gpu_scenario("{loop: open, source: trace, trace: " + trace + "}") + "calibration: " +
        serving_calibration("kvtier_sim_throttle_" + std::to_string(power.size()) + ".json", power) + "\n");
  };
  const std::string cool_dir = (std::filesystem::temp_directory_path() / "kvtier_sim_cool").string();
  const std::string hot_dir = (std::filesystem::temp_directory_path() / "kvtier_sim_hot").string();
  run(scenario(""), false, cool_dir);
  run(scenario(R"({"onset_s": 0.3, "slowdown": 1.25})"), false, hot_dir);
  const std::vector<double> cool = csv_column(cool_dir + "/requests.csv", "ttft_s");
  const std::vector<double> hot = csv_column(hot_dir + "/requests.csv", "ttft_s");
  ASSERT_EQ(cool.size(), 2u);
  ASSERT_GT(cool[0], 1.0) << "long enough to pass the onset";
  EXPECT_NEAR(hot[0], 0.3 + (cool[0] - 0.3) * 1.25, 1e-9);
  EXPECT_NEAR(hot[1], hot[0], 1e-9) << "a minute of idling cools the GPU";
}

// The same request with prefill attention slowed 1.5x where the rest slows 1.25x: each chunk's throttled
// part slows by 1.25 + 0.25 × its share of attention, worked out by hand from the calibration's terms
// (overhead 1 ms, linear layers at 0.8 of 989 TFLOP/s, attention at 0.5). The same factor for both is the
// one-factor throttle.
TEST(Simulation, PrefillAttentionSlowsByTheThrottlesOwnFactor) {
  std::string trace = temp_file("kvtier_sim_attention_throttle.jsonl", mooncake_line(0, 32768, 1, 64));
  auto ttft = [&](const std::string& power) {
    const std::string dir =
        (std::filesystem::temp_directory_path() / ("kvtier_sim_attention_" + std::to_string(power.size())))
            .string();
    run(scenario_from(
            one_gpu_scenario("{loop: open, source: trace, trace: " + trace + "}") + "calibration: " +
            serving_calibration("kvtier_sim_attention_" + std::to_string(power.size()) + ".json", power) +
            "\n"),
        false, dir);
    return csv_column(dir + "/requests.csv", "ttft_s").at(0);
  };
  const double one = ttft(R"({"onset_s": 0.3, "slowdown": 1.25})");
  EXPECT_NEAR(ttft(R"({"onset_s": 0.3, "slowdown": 1.25, "attention_slowdown": 1.25})"), one, 1e-12);
  double heat = 0, expected = 0;
  for (int chunk = 0; chunk < 4; ++chunk) {
    const double cached = 8192.0 * chunk, n = 8192;
    const double attention = 2.0 * 32 * 256 * 32 * (n * cached + n * (n + 1) / 2) / (989e12 * 0.5);
    const double step = 0.001 + 2 * 8.03e9 * n / (989e12 * 0.8) + attention;
    const double cool = std::clamp(0.3 - heat, 0.0, step);
    const double seconds = cool + (step - cool) * (1.25 + 0.25 * attention / step);
    heat = std::min(0.3, heat + seconds);
    expected += seconds;
  }
  EXPECT_NEAR(ttft(R"({"onset_s": 0.3, "slowdown": 1.25, "attention_slowdown": 1.5})"), expected, 1e-6);
  EXPECT_GT(expected, one + 0.05) << "attention is a large part of chunks after 8K-24K cached";
}

// transfers.csv of the same three requests: C's load of A's 6 blocks from DRAM is one row, timed as by
// hand and named for C (request 2); every store is a row, and the stores' bytes are what the D2H link
// carried; the demotions that B's admission made are named for B (request 1).
TEST(Simulation, TransfersCsvHasTheLoadByHandAndEveryStore) {
  std::string trace = temp_file("kvtier_sim_transfers.jsonl", mooncake_line(0, 16 * 512, 1, 16) +
                                                                  mooncake_line(100000, 20 * 512, 100, 20) +
                                                                  mooncake_line(200000, 17 * 512, 1, 16, 17));
  Scenario s =
      scenario_from(one_gpu_scenario("{loop: open, source: trace, trace: " + trace + "}", "61.92GB"));
  std::string out = (std::filesystem::temp_directory_path() / "kvtier_sim_transfers").string();
  nlohmann::json summary = run(s, false, out);
  std::ifstream in(out + "/transfers.csv");
  std::string line;
  std::getline(in, line);
  ASSERT_EQ(line, "path,bytes,start_s,end_s,request");
  std::vector<std::vector<std::string>> loads, stores;
  while (std::getline(in, line)) {
    std::vector<std::string> row = split(line);
    ASSERT_EQ(row.size(), 5u) << line;
    (row[0] == "dram->hbm" ? loads : stores).push_back(row);
  }
  const double block = 512.0 * 131072;
  ASSERT_EQ(loads.size(), 1u);
  EXPECT_EQ(std::stod(loads[0][1]), 6 * block);
  EXPECT_EQ(std::stod(loads[0][2]), 200.0);  // C arrives at 200 s to an idle instance
  EXPECT_EQ(loads[0][4], "2");
  EXPECT_NEAR(std::stod(loads[0][3]) - 200.0, 2.8e-6 + 6 * block / 55e9, 1e-9);

  double stored = 0, d2h = 0;
  int64_t store_events = 0;
  for (const auto& row : stores) {
    EXPECT_EQ(row[0], "hbm->dram") << row[0];
    stored += std::stod(row[1]);
    EXPECT_GE(std::stod(row[3]) - std::stod(row[2]) + 1e-9, 2.8e-6 + std::stod(row[1]) / 55e9) << row[2];
  }
  for (const auto& flow : summary["cache_traffic"]) {
    if (flow["event"] == "demote" || flow["event"] == "write_through")
      store_events += flow["blocks"].get<int64_t>();
  }
  for (const auto& l : summary["link_bytes"]) {
    if (l["link"] == "pcie_d2h_0") d2h = l["bytes"].get<double>();
  }
  // B's admission at 100 s demotes 6 of A's blocks, which go together as one batch (store_queue.h).
  ASSERT_GE(stores.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(std::stod(stores[i][2]), 100.0);
    EXPECT_NEAR(std::stod(stores[i][3]) - std::stod(stores[i][2]), 2.8e-6 + 6 * block / 55e9, 1e-9);
  }
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(stores[i][4], "1") << i;
  EXPECT_EQ(static_cast<int64_t>(stores.size()), store_events);
  EXPECT_GT(stored, 0);
  EXPECT_EQ(stored, d2h);
}

// timeseries.csv's util_<link> is the link's mean utilisation over the interval that ends at the sample:
// the bytes it carried there over what its bandwidth allows. The trace above loads 6 blocks over PCIe at
// 200 s (7.3 ms of the link), so the sample at 201 s holds all of it and no other sample any (a fourth
// request, at 300 s and sharing nothing, keeps the run going past it); the stores B's admission makes at
// 100 s land by the sample at 101 s.
TEST(Simulation, LinkUtilisationIsTheBusyFractionOfEachInterval) {
  std::string trace =
      temp_file("kvtier_sim_util.jsonl",
                mooncake_line(0, 16 * 512, 1, 16) + mooncake_line(100000, 20 * 512, 100, 20) +
                    mooncake_line(200000, 17 * 512, 1, 16, 17) + mooncake_line(300000, 512, 500, 1));
  Scenario s =
      scenario_from(one_gpu_scenario("{loop: open, source: trace, trace: " + trace + "}", "61.92GB") +
                    "sample_interval: 1s\n");
  std::string out = (std::filesystem::temp_directory_path() / "kvtier_sim_util").string();
  run(s, false, out);
  const std::string series = out + "/timeseries.csv";
  const std::vector<double> times = csv_column(series, "time_s"), h2d = csv_column(series, "util_pcie_h2d_0"),
                            d2h = csv_column(series, "util_pcie_d2h_0");
  ASSERT_GE(times.size(), 201u);
  const double block = 512.0 * 131072;
  for (size_t i = 0; i < times.size(); ++i) {
    EXPECT_NEAR(h2d[i], times[i] == 201 ? 6 * block / 55e9 : 0, 1e-10) << times[i];  // 9 digits in the CSV
  }
  double stored_by_101 = 0;
  for (size_t i = 0; i < times.size() && times[i] <= 101; ++i) stored_by_101 += d2h[i] * 55e9;
  EXPECT_NEAR(stored_by_101, 6 * block, 1e3);
}

// instance.transfers: blocking: no step runs while a copy is in flight. B's admission demotes 6 of A's
// blocks (one batch); B's first chunk waits for all six, where in the background mode it runs at once
// beside them. C's admission demotes 7 of B's blocks (one batch), then loads A's 6 from DRAM, one after
// the other as a serving thread copies: its prefill waits for both.
TEST(Simulation, BlockingTransfersHoldTheStepUntilEveryCopyLands) {
  std::string trace = temp_file("kvtier_sim_blocking.jsonl", mooncake_line(0, 16 * 512, 1, 16) +
                                                                 mooncake_line(100000, 20 * 512, 100, 20) +
                                                                 mooncake_line(200000, 17 * 512, 1, 16, 17));
  std::string yaml = one_gpu_scenario("{loop: open, source: trace, trace: " + trace + "}", "61.92GB");
  const std::string reserve = "activation_reserve: 61.92GB}";
  yaml.replace(yaml.find(reserve), reserve.size(), "activation_reserve: 61.92GB, transfers: blocking}");
  std::string out = (std::filesystem::temp_directory_path() / "kvtier_sim_blocking").string();
  nlohmann::json summary = run(scenario_from(yaml), false, out);
  ASSERT_EQ(summary["requests_completed"], 3);
  const double block = 512.0 * 131072;
  const double stores = 2.8e-6 + 6 * block / 55e9;
  const std::vector<double> ttft = csv_column(out + "/requests.csv", "ttft_s");
  EXPECT_NEAR(ttft[1], stores + prefill_by_hand(0, 8192) + prefill_by_hand(8192, 2048), 1e-6);
  const double c_stores = 2.8e-6 + 7 * block / 55e9;
  const double c_load = 2.8e-6 + 6 * block / 55e9;
  EXPECT_NEAR(ttft[2], c_stores + c_load + prefill_by_hand(8192, 512), 1e-6);
}

TEST(Simulation, BreakevenPolicyRecomputesWhatTheDiskWouldLoadSlower) {
  // The same three requests on the H200, whose only lower tier is its 1.1 GB/s disk. 139.8 GiB − 132.03 GB
  // − 16.06 GB of weights leaves 2.02 GB for KV: 30 blocks.
  std::string trace = temp_file("kvtier_sim_policy.jsonl", mooncake_line(0, 16 * 512, 1, 16) +
                                                               mooncake_line(100000, 20 * 512, 100, 20) +
                                                               mooncake_line(200000, 17 * 512, 1, 16, 17));
  auto ttft_of_c = [&](const std::string& policy) {
    std::string yaml = "name: t\nmodel: llama-3.1-8b\nhardware: h200\n"
                       "instance: {hbm_utilisation: 1.0, activation_reserve: 132.03GB, load_policy: " + policy +
                       "}\ncache:\n  block_tokens: 512\n  tiers:\n    - {medium: hbm, kv: bf16}\n"
                       "    - {medium: nvme, kv: bf16, capacity: 40GiB}\n"
                       "workload: {loop: open, source: trace, trace: " + trace + "}\n";
    Scenario s = scenario_from(yaml);
    EXPECT_EQ(s.tiers[0].capacity_blocks(), 30);
    std::string out = (std::filesystem::temp_directory_path() / ("kvtier_sim_policy_" + policy)).string();
    run(s, false, out);
    return csv_column(out + "/requests.csv", "ttft_s")[2];
  };
  // Always load: 6 blocks (3,072 tokens × 128 KiB) from disk, then the last 512 tokens.
  double load = 20e-6 + 2.8e-6 + 6.0 * 512 * 131072 / 1.1e9;
  EXPECT_NEAR(ttft_of_c("always"), load + prefill_by_hand(8192, 512), 1e-6);
  // Break-even: recomputing 3,072 tokens (~0.11 s) beats loading them (0.37 s), so C prefills all but
  // its 10 HBM blocks.
  ASSERT_LT(prefill_by_hand(5120, 3072), load);
  EXPECT_NEAR(ttft_of_c("breakeven"), prefill_by_hand(5120, 3584), 1e-6);
}

TEST(Simulation, FreeTransfersGiveTheAnalyticHitCounts) {
  // Sessions far apart in time and one output token each, so requests never overlap: the engine then
  // admits and releases in the analytic replay's order.
  std::string workload = "{loop: open, source: agent, agent: agent-default, requests: 120, rate: 0.0001}";
  Scenario s = scenario_from(one_gpu_scenario(workload) + "slo: {ttft: 1h}\n");
  nlohmann::json summary = run(s, true);

  TieredCache cache(s.tiers);
  WorkloadPlan plan = build_workload(s);
  std::vector<int64_t> expected(s.tiers.size(), 0);
  Admission admission;
  while (auto ready = plan.driver->next_ready_time()) {
    Request r = plan.driver->pop_ready();
    if (!cache.admit(r.block_ids, admission)) continue;
    int64_t budget = r.input_tokens - 1;
    for (int tier : admission.prefix.tier_of_block) {
      int64_t tokens = std::min<int64_t>(512, budget);
      expected[tier] += std::max<int64_t>(0, tokens);
      budget -= tokens;
    }
    cache.release(admission);
  }
  ASSERT_GT(expected[0] + expected[1], 0) << "the workload should hit the cache";
  for (size_t t = 0; t < expected.size(); ++t) {
    EXPECT_EQ(summary["hit_rate_tokens"][t]["tokens"].get<int64_t>(), expected[t]) << s.tiers[t].name;
  }
}

TEST(Simulation, BytesPerLinkEqualTheCacheEvents) {
  Scenario s =
      scenario_from(one_gpu_scenario("{loop: closed, source: agent, agent: agent-default, sessions: 8, "
                                     "duration: 5min}"));
  std::string out = (std::filesystem::temp_directory_path() / "kvtier_sim_link_bytes").string();
  nlohmann::json summary = run(s, false, out);
  double promoted = 0, stored = 0;
  for (const auto& flow : summary["cache_traffic"]) {
    if (flow["event"] == "promote") promoted += flow["from_bytes"].get<double>();
    if (flow["event"] == "demote" || flow["event"] == "write_through")
      stored += flow["to_bytes"].get<double>();
  }
  ASSERT_GT(promoted, 0);
  ASSERT_GT(stored, 0);
  std::map<std::string, double> links;
  for (const auto& l : summary["link_bytes"]) links[l["link"]] = l["bytes"].get<double>();
  EXPECT_NEAR(links["pcie_h2d_0"], promoted, 1.0);
  EXPECT_NEAR(links["pcie_d2h_0"], stored, 1.0);
  EXPECT_NEAR(links["dram"], promoted + stored, 2.0);
  // transfers.csv: a row for every byte each PCIe direction carried.
  std::vector<double> bytes = csv_column(out + "/transfers.csv", "bytes");
  std::map<std::string, double> by_path;
  std::ifstream in(out + "/transfers.csv");
  std::string line;
  std::getline(in, line);
  for (size_t row = 0; std::getline(in, line); ++row) by_path[split(line).at(0)] += bytes.at(row);
  EXPECT_EQ(by_path.size(), 2u);
  EXPECT_EQ(by_path["dram->hbm"], links["pcie_h2d_0"]);
  EXPECT_EQ(by_path["hbm->dram"], links["pcie_d2h_0"]);
}

TEST(Simulation, SameInputsGiveIdenticalResults) {
  Scenario s =
      scenario_from(one_gpu_scenario("{loop: closed, source: agent, agent: agent-default, sessions: 4, "
                                     "duration: 2min}"));
  EXPECT_EQ(run(s).dump(), run(s).dump());
}

// Following the last stores to their end for transfers.csv happens after the run: the summary is that of
// a run that writes no folder, and the samples stop with the last request.
TEST(Simulation, WritingTheFolderChangesNoFigure) {
  Scenario s =
      scenario_from(one_gpu_scenario("{loop: closed, source: agent, agent: agent-default, sessions: 4, "
                                     "duration: 2min}"));
  std::string out = (std::filesystem::temp_directory_path() / "kvtier_sim_same_summary").string();
  nlohmann::json written = run(s, false, out);
  EXPECT_EQ(written.dump(), run(s).dump());
  std::vector<double> times = csv_column(out + "/timeseries.csv", "time_s");
  ASSERT_FALSE(times.empty());
  EXPECT_LE(times.back(), written["simulated_s"].get<double>());
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The instance that keeps its own clock between SimGrid rounds (ServingInstance::run_alone) reads every
// time SimGrid would give: the same summary and the same CSVs, byte for byte, as an instance that sleeps on
// SimGrid at every step, with stores in flight, loads and idle waits between arrivals, in the background
// and blocking, a wait for loads right after a step the instance passed on its own clock, and requests
// preempted while their loads are in flight.
TEST(Simulation, TheInstancesOwnClockMakesTheRunSimGridsClockMakes) {
  std::string trace;
  for (int r = 0; r < 40; ++r)
    trace += mooncake_line(r * 450 + (r % 7) * 50, 6000, (r % 5) * 100, 12, 1000 + r);
  const std::string trace_path = temp_file("kvtier_sim_own_clock.jsonl", trace);
  const std::string tiers = "    - {medium: nvme, kv: bf16, capacity: 1TiB}\n";
  const std::string open_loop =
      one_gpu_scenario("{loop: open, source: trace, trace: " + trace_path + "}", "62GB", tiers);
  std::string blocking = open_loop;
  const std::string reserve = "activation_reserve: 62GB}";
  blocking.replace(blocking.find(reserve), reserve.size(), "activation_reserve: 62GB, transfers: blocking}");
  const std::string h200_tiers =
      "name: t\nmodel: llama-3.1-8b\nhardware: h200\n"
      "instance: {gpus: 1, hbm_utilisation: 0.9, activation_reserve: 8GiB}\n"
      "cache: {block_tokens: 512, tiers: [{medium: hbm, kv: bf16}, "
      "{medium: dram, kv: bf16, capacity: 96GiB, placement: inclusive}, "
      "{medium: nvme, kv: bf16, capacity: 48GiB, placement: inclusive}]}\n";
  const std::vector<std::string> scenarios = {
      one_gpu_scenario("{loop: closed, source: agent, agent: agent-default, sessions: 8, duration: 3min}",
                       "56GB"),
      open_loop, blocking,
      // Loads from a slow disk tier, long enough that the batch waits for them after a step of its own.
      h200_tiers +
          "workload: {loop: open, source: agent, agent: agent-default, requests: 1000, "
          "duration: 1000h, rate: 0.05}\n",
      // Requests preempted while their loads are in flight, after steps passed alone (cancel_load).
      h200_tiers +
          "workload: {loop: closed, source: agent, agent: agent-default, sessions: 32, "
          "duration: 10min}\n"};
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  for (size_t i = 0; i < scenarios.size(); ++i) {
    SCOPED_TRACE(scenarios[i]);
    Scenario s = scenario_from(scenarios[i]);
    SimulationOptions own, simgrid;
    own.out_dir = (dir / "kvtier_sim_own_clock").string();
    simgrid.out_dir = (dir / "kvtier_sim_simgrid_clock").string();
    simgrid.simgrid_clock_only = true;
    const nlohmann::json a = run_isolated([&] { return simulate(s, own); });
    const nlohmann::json b = run_isolated([&] { return simulate(s, simgrid); });
    EXPECT_EQ(a.dump(), b.dump());
    for (const char* file : {"/requests.csv", "/timeseries.csv", "/transfers.csv"})
      EXPECT_EQ(file_text(own.out_dir + file), file_text(simgrid.out_dir + file)) << file;
    EXPECT_GT(a["link_bytes"][0]["bytes"].get<double>(), 0) << "the run moves KV between the tiers";
  }
}

// kvtier validate's cache check replays a closed loop at a run's recorded arrivals: replayed at its own, a
// run makes every placement again, each request's hits and every byte on every link. (Not every time: an
// arrival requests.csv rounds to nine digits may fall on the other side of a step's end and join the next
// step.)
TEST(Simulation, AClosedLoopReplayedAtItsOwnArrivalsMakesTheSameRun) {
  Scenario s = scenario_from(one_gpu_scenario(
      "{loop: closed, source: agent, agent: agent-default, sessions: 8, duration: 3min}", "56GB"));
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const std::string closed_dir = (dir / "kvtier_sim_closed").string();
  const nlohmann::json closed = run(s, false, closed_dir);
  const std::string requests = closed_dir + "/requests.csv";
  const std::vector<double> sessions = csv_column(requests, "session"), turns = csv_column(requests, "turn"),
                            arrivals = csv_column(requests, "arrival_s");
  ASSERT_GT(sessions.size(), 30u);
  SimulationOptions options;
  options.out_dir = (dir / "kvtier_sim_recorded").string();
  options.recorded_arrivals.emplace();
  for (size_t r = 0; r < sessions.size(); ++r) {
    options.recorded_arrivals->push_back(
        {static_cast<int64_t>(sessions[r]), static_cast<int32_t>(turns[r]), arrivals[r]});
  }
  const nlohmann::json replayed = run_isolated([&] { return simulate(s, options); });
  const std::string replayed_requests = options.out_dir + "/requests.csv";
  for (const char* column : {"session", "turn", "input_tokens", "hit_tokens_hbm", "hit_tokens_dram"})
    EXPECT_EQ(csv_column(replayed_requests, column), csv_column(requests, column)) << column;
  EXPECT_EQ(replayed["link_bytes"], closed["link_bytes"]);
  EXPECT_GT(closed["link_bytes"][0]["bytes"].get<double>(), 0) << "the run moves KV between the tiers";
}

TEST(Simulation, BadScenariosFailBeforeRunning) {
  EXPECT_THROW(scenario_from(one_gpu_scenario("{loop: closed}") + "instnace: {}\n"), ConfigError);
  std::string hbm_capacity =
      "name: t\nmodel: llama-3.1-8b\nhardware: h200\ncache:\n  tiers:\n"
      "    - {medium: hbm, kv: bf16, capacity: 10GiB}\nworkload: {}\n";
  EXPECT_THROW(scenario_from(hbm_capacity), ConfigError);
  std::string no_room =
      "name: t\nmodel: deepseek-v3\nhardware: h200\ncache:\n  tiers:\n"
      "    - {medium: hbm, kv: bf16}\nworkload: {}\n";
  try {
    scenario_from(no_room);
    FAIL() << "671 B parameters do not fit one H200";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("leave no HBM for KV"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvtier
