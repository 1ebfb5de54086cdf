// What a run costs and the energy it takes, the parts of a request's TTFT, the completions in and after
// the window, and the scenario keys planning leans on (hardware overrides, the node's capacity, one seed):
// each against arithmetic written out by hand.
#include "sim/engine/run_cost.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "sim/core/config_error_test_support.h"
#include "sim/engine/metrics.h"
#include "sim/engine/workload.h"

namespace kvtier {
namespace {

using testing::error_of;

// Round numbers, so that every figure below can be worked by hand.
const std::string kCostFile =
    "name: round numbers\n"
    "gpu: {usd_per_hour: 2, busy_power: 700W, idle_power: 100W}\n"
    "host: {power: 800W}\n"
    "dram: {usd_per_gb_month: 0.73, power_per_tb: 100W}\n"
    "nvme: {usd_per_gb_month: 0.073, drive_active_power: 20W, drive_idle_power: 5W}\n";

std::string write_cost_file() {
  const std::string path = (std::filesystem::temp_directory_path() / "round.yaml").string();
  std::ofstream(path) << kCostFile;
  return path;
}

// Llama-3.1-8B on the one-GPU H200 machine (128 GiB of DRAM, one 64 GiB drive at 1.1 GB/s read and 1.6 GB/s
// write), a 100 GB DRAM tier and a 50 GB NVMe tier of bf16 blocks of 512 tokens.
std::string scenario_text(const std::string& cost_path) {
  return "name: t\n"
         "model: llama-3.1-8b\n"
         "hardware: h200\n"
         "cost: " +
         cost_path +
         "\n"
         "session_tokens: 256K\n"
         "cache:\n"
         "  block_tokens: 512\n"
         "  tiers: [{medium: hbm, kv: bf16}, {medium: dram, kv: bf16, capacity: 100GB},\n"
         "          {medium: nvme, kv: bf16, capacity: 50GB}]\n"
         "workload: {sessions: 4, duration: 1min, agent: agent-default}\n"
         "seed: 7\n";
}

std::vector<ScenarioRun> plan(const std::string& text, const std::vector<std::string>& sets = {}) {
  std::vector<Override> overrides;
  for (const std::string& s : sets) overrides.push_back(parse_set_argument(s));
  return plan_runs(ConfigNode::load_string(text, "s.yaml"), overrides);
}

TEST(RunCost, PriceAndEnergyByHand) {
  const Scenario s = plan(scenario_text(write_cost_file()))[0].scenario;
  ASSERT_TRUE(s.cost.has_value());
  // 1 GPU x $2 + 100 GB x $0.73 / 730 h + 50 GB x $0.073 / 730 h.
  EXPECT_NEAR(usd_per_hour(s, *s.cost), 2.105, 1e-12);
  RunUsage u;
  u.window_s = 3600;
  u.gpu_busy_s = 1800;
  u.nvme_read_bytes = 1.1e9 * 360;   // 360 s of the drive's reads
  u.nvme_write_bytes = 1.6e9 * 360;  // and 360 s of its writes: busy 0.2 of the hour
  u.tokens_in_window = 1'000'000;
  u.tokens_in_slo = 500'000;
  const nlohmann::json c = run_cost_json(s, *s.cost, u);
  EXPECT_NEAR(c["usd"].get<double>(), 2.105, 1e-12);
  EXPECT_NEAR(c["usd_per_million_tokens_in_slo"].get<double>(), 4.21, 1e-12);
  // GPU (100 + 600 x 0.5) W, host 800 W, DRAM 100 W/TB x 0.1 TB, the drive (5 + 15 x 0.2) W, for an hour.
  EXPECT_NEAR(c["energy_j_by_component"]["gpu"].get<double>(), 1'440'000, 1e-6);
  EXPECT_NEAR(c["energy_j_by_component"]["host"].get<double>(), 2'880'000, 1e-6);
  EXPECT_NEAR(c["energy_j_by_component"]["dram"].get<double>(), 36'000, 1e-6);
  EXPECT_NEAR(c["energy_j_by_component"]["nvme"].get<double>(), 28'800, 1e-6);
  EXPECT_NEAR(c["energy_j"].get<double>(), 4'384'800, 1e-6);
  EXPECT_NEAR(c["tokens_per_joule"].get<double>(), 1e6 / 4'384'800, 1e-12);
  EXPECT_NEAR(c["mean_power_w"].get<double>(), 4'384'800.0 / 3600, 1e-9);
  u.tokens_in_slo = 0;
  EXPECT_TRUE(run_cost_json(s, *s.cost, u)["usd_per_million_tokens_in_slo"].is_null());
}

TEST(RunCost, SessionsFitInWholeBlocks) {
  const Scenario s = plan(scenario_text(write_cost_file()))[0].scenario;
  const nlohmann::json fit = sessions_fit_json(s);
  // bf16 Llama-3.1-8B: 2 x 8 heads x 128 x 2 B x 32 layers = 128 KiB a token, 64 MiB a 512-token block; a
  // 256K-token session is 512 blocks. 100 GB holds 1,490 blocks: 2 sessions. 50 GB: 745 blocks, 1 session.
  EXPECT_EQ(fit[1]["bytes_per_session"].get<int64_t>(), int64_t{512} << 26);
  EXPECT_EQ(fit[1]["sessions"].get<int64_t>(), 2);
  EXPECT_EQ(fit[2]["sessions"].get<int64_t>(), 1);
}

TEST(RunCost, CostFileErrorsAreLocated) {
  auto parse = [](const std::string& text) {
    return error_of([&] { parse_cost_file(ConfigNode::load_string(text, "c.yaml")); });
  };
  std::string idle_above_busy = kCostFile;
  idle_above_busy.replace(idle_above_busy.find("idle_power: 100W"), 16, "idle_power: 900W");
  EXPECT_EQ(parse(idle_above_busy), "c.yaml:2:54: gpu.idle_power: expected at most busy_power");
  std::string no_unit = kCostFile;
  no_unit.replace(no_unit.find("800W"), 4, "800");
  EXPECT_NE(parse(no_unit).find("c.yaml:3:15: host.power: a unit is required"), std::string::npos)
      << parse(no_unit);
  std::string negative = kCostFile;
  negative.replace(negative.find("usd_per_hour: 2"), 15, "usd_per_hour: -2");
  EXPECT_EQ(parse(negative), "c.yaml:2:21: gpu.usd_per_hour: expected a price in US dollars, 0 or more");
}

TEST(TtftParts, AddUpToTheTtftAndCapEachPartAtWhatIsLeft) {
  RequestRecord r;
  r.arrival_s = 10;
  r.admitted_s = 12;     // 2 s queued
  r.first_token_s = 15;  // TTFT 5 s
  r.load_wait_by_tier = {0, 0.6, 0.2};
  r.prefill_s = 1.5;
  r.conversion_s = 0.1;
  TtftParts p = ttft_parts(r);
  EXPECT_DOUBLE_EQ(p.queue_s, 2);
  EXPECT_DOUBLE_EQ(p.prefill_s, 1.5);
  EXPECT_DOUBLE_EQ(p.conversion_s, 0.1);
  EXPECT_DOUBLE_EQ(p.load_s[1], 0.6);
  EXPECT_DOUBLE_EQ(p.load_s[2], 0.2);
  EXPECT_NEAR(p.other_s, 0.6, 1e-12);
  // A load overlapped with the prefill: 3 s of load where 1.4 s is left after queue, prefill and
  // conversion; it counts 1.4 s, split 3:1 over the tiers, and nothing is left over.
  r.load_wait_by_tier = {0, 2.25, 0.75};
  p = ttft_parts(r);
  EXPECT_NEAR(p.load_s[1], 1.05, 1e-12);
  EXPECT_NEAR(p.load_s[2], 0.35, 1e-12);
  EXPECT_DOUBLE_EQ(p.other_s, 0);
}

TEST(Summary, CompletionsInAndAfterTheWindow) {
  auto request = [](double arrival, double first, double done, int64_t in, int64_t out) {
    RequestRecord r;
    r.arrival_s = r.admitted_s = arrival;
    r.first_token_s = first;
    r.completion_s = done;
    r.input_tokens = in;
    r.output_tokens = out;
    r.hit_tokens = {0};
    r.load_wait_by_tier = {0};
    return r;
  };
  // Window 10 s, SLOs 2 s TTFT and 0.1 s TPOT: the first meets both, the second misses TTFT, the third
  // ends after the window.
  std::vector<RequestRecord> records = {request(0, 1, 2, 100, 11), request(1, 5, 6, 200, 11),
                                        request(8, 9, 12, 300, 11)};
  nlohmann::json s = summarise(records, {"hbm"}, {}, {}, Slo{2, 0.1}, 10);
  EXPECT_EQ(s["requests_completed"], 3);
  EXPECT_EQ(s["requests_completed_in_window"], 2);
  EXPECT_EQ(s["requests_completed_after_window"], 1);
  EXPECT_EQ(s["goodput_requests"], 1);
  EXPECT_EQ(s["tokens_in_window"], 111 + 211);
  EXPECT_EQ(s["goodput_tokens"], 111);
  EXPECT_NEAR(s["ttft_parts_s"]["other"].get<double>(), (1.0 + 4 + 1) / 3, 1e-12);
}

TEST(ScenarioPlanning, HardwareKeysCanBeSet) {
  const std::string text = scenario_text(write_cost_file());
  const Scenario s = plan(text, {"hardware.pcie.h2d_bandwidth=10GB/s"})[0].scenario;
  EXPECT_DOUBLE_EQ(s.hardware.pcie_h2d.bandwidth, 10e9);
  EXPECT_DOUBLE_EQ(s.hardware.dram_capacity, 128.0 * (1 << 30));  // the rest of h200 as it was
  EXPECT_EQ(error_of([&] { plan(text, {"hardware.pcie.h2d_bandwidth=fast"}); }),
            "--set hardware.pcie.h2d_bandwidth=fast: expected a bandwidth such as "
            "55GB/s or 4.8TB/s, got 'fast'");
  EXPECT_NE(error_of([&] { plan(text, {"hardware.pcie.h2d_bandwith=1GB/s"}); }).find("h2d_bandwidth"),
            std::string::npos);
}

TEST(ScenarioPlanning, ATierLargerThanTheNodeIsAnErrorUnlessOversubscribed) {
  const std::string text = scenario_text(write_cost_file());
  EXPECT_EQ(
      error_of([&] { plan(text, {"cache.tiers[1].capacity=200GiB"}); }),
      "--set cache.tiers[1].capacity=200GiB: a 200.0 GiB tier does not fit in the node's DRAM, 128.0 GiB in "
      "H200 (kvtier calibration machine); make it smaller, or set allow_oversubscribe: true "
      "(--allow-oversubscribe) to simulate it anyway");
  EXPECT_NE(error_of([&] {
              plan(text, {"cache.tiers[2].capacity=65GiB"});
            }).find("does not fit in the node's NVMe"),
            std::string::npos);
  const Scenario s = plan(text, {"cache.tiers[1].capacity=200GiB", "allow_oversubscribe=true"})[0].scenario;
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("a 200.0 GiB tier does not fit"), std::string::npos) << s.warnings[0];
}

// The first session's first request of a scenario's generated workload.
int64_t first_input_tokens(const Scenario& s) {
  WorkloadPlan w = build_workload(s);
  return w.driver->pop_ready().input_tokens;
}

TEST(ScenarioPlanning, TheScenariosSeedDrivesTheBuiltInWorkload) {
  const std::string text = scenario_text(write_cost_file());
  std::set<int64_t> first;
  for (const char* seed : {"seed=1", "seed=2", "seed=3"})
    first.insert(first_input_tokens(plan(text, {seed})[0].scenario));
  EXPECT_EQ(first.size(), 3u);  // each seed draws its own first message
  EXPECT_EQ(first_input_tokens(plan(text, {"seed=2"})[0].scenario),
            first_input_tokens(plan(text, {"seed=2"})[0].scenario));
  EXPECT_NE(error_of([&] { plan(text, {"workload.agent={seed: 3}"}); }).find("a scenario's seed drives"),
            std::string::npos);
}

}  // namespace
}  // namespace kvtier
