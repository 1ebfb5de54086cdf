// Speed of the trace tools on a synthetic agent trace written by the built-in generator
// (configs/workloads/agent-default.yaml): reading it, and `kvtier trace stats` on it. The target
// (issue 3): stats on 1 million requests in under 3 s on one core.
//   build/traces/kvtier_traces_benchmark --benchmark_filter=Stats/1000000
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "sim/workload/agent_workload.h"
#include "sim/workload/trace_reader.h"
#include "sim/workload/trace_stats.h"

namespace kvtier {
namespace {

// One trace file per size, written once per process.
const std::string& synthetic_trace(int64_t requests) {
  static std::map<int64_t, std::string> paths;
  auto found = paths.find(requests);
  if (found != paths.end()) return found->second;
  std::string path =
      (std::filesystem::temp_directory_path() / ("kvtier-bench-agent-" + std::to_string(requests) + ".jsonl"))
          .string();
  std::ofstream out(path, std::ios::binary);
  write_agent_trace(default_agent_workload(), requests, out);
  return paths.emplace(requests, path).first->second;
}

TraceReadOptions native_options() {
  TraceReadOptions options;
  options.format = TraceFormat::kNative;
  return options;
}

void BM_ReadNativeTrace(benchmark::State& state) {
  const std::string& path = synthetic_trace(state.range(0));
  int64_t blocks = 0;
  for (auto _ : state) {
    std::unique_ptr<RequestStream> stream = open_trace(path, native_options());
    Request request;
    while (stream->next(request)) blocks += static_cast<int64_t>(request.block_ids.size());
  }
  benchmark::DoNotOptimize(blocks);
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ReadNativeTrace)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_TraceStats(benchmark::State& state) {
  const std::string& path = synthetic_trace(state.range(0));
  TraceStats stats;
  for (auto _ : state) {
    std::unique_ptr<RequestStream> stream = open_trace(path, native_options());
    stats = compute_trace_stats(*stream, {.reuse_sampling = 64});  // what the CLI uses for files this size
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["blocks"] = static_cast<double>(stats.total_blocks);
  state.counters["unique_blocks"] = static_cast<double>(stats.unique_blocks);
}
BENCHMARK(BM_TraceStats)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace kvtier
