// Speed of the serving simulation, each run in its own process as `kvtier simulate` runs it:
//  - the Mooncake conversation sample (2,000 requests, traces/) on the H200 scenario
//    (target: under 0.5 s);
//  - a 20-minute closed-loop replay of 256 agent sessions on the default scenario's 4-bit variant
//    (target: under 5 s), with events per second (target: over 500,000).
#include <benchmark/benchmark.h>

#include <filesystem>

#include "sim/core/config_files.h"
#include "sim/engine/isolated_run.h"
#include "sim/engine/simulation.h"

namespace kvtier {
namespace {

const char* kMooncakeSample = "traces/mooncake-conversation-first2000.jsonl";

void run_and_count(benchmark::State& state, const Scenario& scenario) {
  double events = 0, cache_events = 0, simulated = 0;
  for (auto _ : state) {
    nlohmann::json summary = run_isolated([&] { return simulate(scenario, {}); });
    events = summary["events"].get<double>();
    cache_events = summary["cache_events"].get<double>();
    simulated = summary["simulated_s"].get<double>();
  }
  // Engine events (steps, transfers, arrivals, completions) and, with them, the cache's block events
  // (placements, promotions, demotions, drops) that the engine turns into transfers.
  auto rate = [](double n) { return benchmark::Counter(n, benchmark::Counter::kIsIterationInvariantRate); };
  state.counters["engine_events_per_s"] = rate(events);
  state.counters["all_events_per_s"] = rate(events + cache_events);
  state.counters["simulated_s"] = simulated;
}

void BM_MooncakeSampleOnH200(benchmark::State& state) {
  if (!std::filesystem::exists(kMooncakeSample)) {
    state.SkipWithError(
        "traces/mooncake-conversation-first2000.jsonl is absent: run from the source root");
    return;
  }
  ConfigNode root = load_config("h200-llama8b", "configs/scenarios");
  root.set("workload", std::string("{loop: open, source: trace, trace: ") + kMooncakeSample + "}");
  run_and_count(state, parse_scenario(root));
}
BENCHMARK(BM_MooncakeSampleOnH200)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

void BM_ClosedLoop256Sessions20Minutes(benchmark::State& state) {
  ConfigNode root = load_config("amd-seed-minimax-mi355x", "configs/scenarios");
  root.set("workload.sessions", "256");
  root.set("cache.tiers[0].kv", "turboquant4");
  root.set("cache.tiers[1].kv", "turboquant4");
  run_and_count(state, parse_scenario(root));
}
BENCHMARK(BM_ClosedLoop256Sessions20Minutes)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace
}  // namespace kvtier
