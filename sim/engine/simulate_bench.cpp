// Speed of the serving simulation, each run in its own process as `kvtier simulate` runs it:
//  - the Mooncake conversation sample (2,000 requests, traces/) on the H200 scenario
//    (target: under 0.5 s);
//  - a 20-minute closed-loop replay of 256 agent sessions on the default scenario's 4-bit variant
//    (target: under 5 s), with events per second (target: over 500,000);
//  - growth with the trace's length: the Mooncake sample replayed 1, 4 and 16 times end to end, and the
//    synthetic agent trace's first 2,000 turns replayed 1, 4 and 16 times end to end at 0.02x its rate,
//    on the H200 scenario. Each reports events and requests per CPU-second of the simulating process, its
//    peak resident memory, its page faults and its system time (a fresh page faults, several microseconds
//    on a virtual machine);
//  - a cluster: an hour of Mooncake-like traffic (the sample six times over, new ids) on 8, 16, 32 and 64
//    instances of Llama-3.1-8B on 8x H100 nodes (the cluster-llama8b-h100 scenario), behind the
//    prefix-aware router, with the traffic scaled to the instances: each request of the hour sent by one
//    user per eight instances, each user's blocks new (target: 64 instances in 30 s; the time should grow
//    linearly with the instances); and the same over a KV pool shared by the instances;
//  - memory with the trace's length: the Mooncake sample replayed 1, 4 and 16 times with the same block
//    ids, at 0.3x its rate (the H200 keeps up, so the queue stays short), writing its output folder as
//    `kvtier simulate` does. Its peak memory should not grow with the copies.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "sim/core/config_files.h"
#include "sim/core/process_usage.h"
#include "sim/core/temporary_folder.h"
#include "sim/engine/isolated_run.h"
#include "sim/engine/simulation.h"
#include "sim/workload/agent_workload.h"
#include "sim/workload/native_format.h"
#include "sim/workload/trace_reader.h"

namespace kvtier {
namespace {

const char* kMooncakeSample = "traces/mooncake-conversation-first2000.jsonl";

// Runs the scenario in a child process and counts per CPU-second of that child.
void run_and_count(benchmark::State& state, const Scenario& scenario, const std::string& out_dir = "") {
  nlohmann::json result;
  for (auto _ : state) {
    result = run_isolated([&] {
      const ProcessUsage before = process_usage();
      SimulationOptions options;
      options.out_dir = out_dir;
      nlohmann::json summary = simulate(scenario, options);
      const ProcessUsage after = process_usage();
      return nlohmann::json{{"events", summary["events"]},
                            {"cache_events", summary["cache_events"]},
                            {"requests", summary["requests_issued"]},
                            {"simulated_s", summary["simulated_s"]},
                            {"cpu_s", after.cpu_s - before.cpu_s},
                            {"system_s", after.system_s - before.system_s},
                            {"page_faults", after.minor_faults - before.minor_faults},
                            {"peak_rss_bytes", after.peak_rss_bytes}};
    });
  }
  const double events = result["events"].get<double>();
  const double cpu_s = result["cpu_s"].get<double>();
  // Engine events (steps, transfers, arrivals, completions) and, with them, the cache's block events
  // (placements, promotions, demotions, drops) that the engine turns into transfers.
  auto rate = [](double n) { return benchmark::Counter(n, benchmark::Counter::kIsIterationInvariantRate); };
  state.counters["engine_events_per_s"] = rate(events);
  state.counters["all_events_per_s"] = rate(events + result["cache_events"].get<double>());
  state.counters["engine_events_per_cpu_s"] = events / cpu_s;
  state.counters["requests_per_cpu_s"] = result["requests"].get<double>() / cpu_s;
  state.counters["cpu_s"] = cpu_s;
  state.counters["system_s"] = result["system_s"].get<double>();
  state.counters["page_faults"] = result["page_faults"].get<double>();
  state.counters["requests"] = result["requests"].get<double>();
  state.counters["peak_rss_MB"] = result["peak_rss_bytes"].get<double>() / 1e6;
  state.counters["simulated_s"] = result["simulated_s"].get<double>();
}

bool have_sample(benchmark::State& state) {
  if (std::filesystem::exists(kMooncakeSample)) return true;
  state.SkipWithError("traces/mooncake-conversation-first2000.jsonl is absent: run from the source root");
  return false;
}

Scenario h200_on_trace(const std::string& trace, double rate = 1) {
  ConfigNode root = load_config("h200-llama8b", "configs/scenarios");
  root.set("workload",
           "{loop: open, source: trace, trace: " + trace + ", rate: " + std::to_string(rate) + "}");
  return parse_scenario(root);
}

void BM_MooncakeSampleOnH200(benchmark::State& state) {
  if (!have_sample(state)) return;
  run_and_count(state, h200_on_trace(kMooncakeSample));
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

// The sample `copies` times over, each copy after the last (arrivals shifted by the sample's span plus a
// second). With new_ids, each copy's block ids move past every id before it, so a copy is new traffic with
// the sample's statistics rather than a replay of cached prefixes.
// With `users` > 1, each request is sent that many times at once, each user's block ids apart from the rest.
void write_repeated_sample(const std::filesystem::path& out, int copies, bool new_ids, int users = 1) {
  std::vector<Request> requests;
  std::unique_ptr<RequestStream> sample = open_trace(kMooncakeSample, TraceReadOptions{});
  double span_s = 0;
  uint64_t ids = 0;
  for (Request r; sample->next(r);) {
    span_s = std::max(span_s, r.arrival_s);
    for (uint64_t id : r.block_ids) ids = std::max(ids, id + 1);
    requests.push_back(r);
  }
  std::ofstream file(out);
  for (int copy = 0; copy < copies; ++copy) {
    for (const Request& request : requests) {
      for (int user = 0; user < users; ++user) {
        Request r = request;
        r.arrival_s += copy * (span_s + 1);
        if (new_ids) {
          for (uint64_t& id : r.block_ids) id += static_cast<uint64_t>(copy * users + user) * ids;
        }
        write_mooncake(file, r);
      }
    }
  }
}

// The sample state.range(0) times over (write_repeated_sample), at `rate` times its rate, into an output
// folder when `into_folder`.
void replay_copies(benchmark::State& state, bool new_ids, double rate, bool into_folder) {
  if (!have_sample(state)) return;
  TemporaryFolder folder("kvtier-simulate-bench");
  const std::filesystem::path trace = folder.path() / "mooncake-copies.jsonl";
  write_repeated_sample(trace, static_cast<int>(state.range(0)), new_ids);
  run_and_count(state, h200_on_trace(trace.string(), rate),
                into_folder ? (folder.path() / "out").string() : "");
}

void BM_MooncakeSampleRepeated(benchmark::State& state) {
  replay_copies(state, true, 1, false);
}
void BM_MooncakeSampleReplayedIntoAFolder(benchmark::State& state) {
  replay_copies(state, false, 0.3, true);
}
void once_each_at_1_4_16_copies(benchmark::internal::Benchmark* b) {
  b->Arg(1)->Arg(4)->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
}
BENCHMARK(BM_MooncakeSampleRepeated)->Apply(once_each_at_1_4_16_copies);
BENCHMARK(BM_MooncakeSampleReplayedIntoAFolder)->Apply(once_each_at_1_4_16_copies);

// An hour of the sample on state.range(0) instances, one user per eight instances (above): plain, over a
// KV pool of 64 GiB per instance shared by all, or with half the instances prefilling and handing their
// KV layer by layer to the other half.
enum class ClusterKind { kPlain, kPool, kDisaggregated };
void cluster_on_a_mooncake_hour(benchmark::State& state, ClusterKind kind) {
  if (!have_sample(state)) return;
  const auto instances = static_cast<int>(state.range(0));
  TemporaryFolder folder("kvtier-simulate-bench");
  const std::filesystem::path trace = folder.path() / "mooncake-hour.jsonl";
  write_repeated_sample(trace, 6, true, instances / 8);
  ConfigNode root = load_config("cluster-llama8b-h100", "configs/scenarios");
  root.set("workload", "{loop: open, source: trace, trace: " + trace.string() + "}");
  root.set("cluster.instances", std::to_string(instances));
  root.set("cluster.router.policy", "prefix_aware");
  if (kind == ClusterKind::kPool)
    root.set("cluster.pool", "{kv: bf16, capacity: " + std::to_string(64 * instances) + "GiB}");
  if (kind == ClusterKind::kDisaggregated)
    root.set("cluster.disaggregation",
             "{prefill_instances: " + std::to_string(instances / 2) + ", kv_transfer: layerwise}");
  run_and_count(state, parse_scenario(root));
  state.counters["instances"] = instances;
}
void BM_ClusterOnAMooncakeHour(benchmark::State& state) {
  cluster_on_a_mooncake_hour(state, ClusterKind::kPlain);
}
void BM_ClusterWithAPoolOnAMooncakeHour(benchmark::State& state) {
  cluster_on_a_mooncake_hour(state, ClusterKind::kPool);
}
void BM_ClusterDisaggregatedOnAMooncakeHour(benchmark::State& state) {
  cluster_on_a_mooncake_hour(state, ClusterKind::kDisaggregated);
}
void at_8_to_64_instances(benchmark::internal::Benchmark* b) {
  b->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
}
BENCHMARK(BM_ClusterOnAMooncakeHour)->Apply(at_8_to_64_instances);
BENCHMARK(BM_ClusterWithAPoolOnAMooncakeHour)->Apply(at_8_to_64_instances);
BENCHMARK(BM_ClusterDisaggregatedOnAMooncakeHour)->Apply(at_8_to_64_instances);

// The first 2,000 turns of the built-in agent workload, then the same again `copies` times over, each copy
// after the last (arrivals shifted by the trace's span plus a second) with its sessions renumbered: a
// session's turns draw their content from its number, so a copy is new traffic with the same statistics
// (only the agents' shared prefixes recur).
void write_repeated_agent_trace(const std::filesystem::path& out, int copies) {
  std::stringstream trace;
  const int64_t sessions = write_agent_trace(default_agent_workload(), 2000, trace);
  std::vector<nlohmann::json> turns;
  double span_s = 0;
  for (std::string line; std::getline(trace, line);) {
    turns.push_back(nlohmann::json::parse(line));
    span_s = std::max(span_s, turns.back()["arrival_s"].get<double>());
  }
  std::ofstream file(out);
  for (int copy = 0; copy < copies; ++copy) {
    for (nlohmann::json turn : turns) {
      turn["session"] = turn["session"].get<int64_t>() + copy * sessions;
      turn["arrival_s"] = turn["arrival_s"].get<double>() + copy * (span_s + 1);
      file << turn.dump() << '\n';
    }
  }
}

// At 1x its session rate the agent workload overloads the H200 (TTFT p50 about 500 s on 2,000 turns): its
// queue, not the simulator, would set the growth. At 0.02x the queue stays empty, so each copy costs what
// the first did.
void BM_AgentTraceRepeated(benchmark::State& state) {
  TemporaryFolder folder("kvtier-simulate-bench");
  const std::filesystem::path trace = folder.path() / "agent-copies.jsonl";
  write_repeated_agent_trace(trace, static_cast<int>(state.range(0)));
  run_and_count(state, h200_on_trace(trace.string(), 0.02));
}
BENCHMARK(BM_AgentTraceRepeated)->Apply(once_each_at_1_4_16_copies);

}  // namespace
}  // namespace kvtier
