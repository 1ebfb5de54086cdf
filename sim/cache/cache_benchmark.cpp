// Speed of the fast hit-rate mode (issue 4's targets, on one core):
//   - the LRU curve at 32 capacities over a 300,000-block-access trace in under 0.3 s, against one
//     replay per capacity (the naive way, the "before");
//   - any single policy at one capacity at over 5 million block accesses per second.
// The trace: 20,000 requests continuing 2,000 conversations behind a shared first block, 1 to 30 blocks
// each (about 310,000 block accesses, 58,000 distinct blocks).
#include <benchmark/benchmark.h>

#include <cmath>

#include "sim/cache/cache_test_support.h"
#include "sim/cache/hit_rate.h"

namespace kvtier {
namespace {

const std::vector<Request>& trace() {
  static const std::vector<Request> requests = testing::random_requests(20000, 2000, 30, 2026);
  return requests;
}

int64_t block_accesses() {
  int64_t total = 0;
  for (const Request& r : trace()) total += static_cast<int64_t>(r.block_ids.size());
  return total;
}

// 32 capacities, geometric from 16 blocks to 64K blocks.
std::vector<int64_t> capacities() {
  std::vector<int64_t> out;
  for (int i = 0; i < 32; ++i) out.push_back(static_cast<int64_t>(16 * std::pow(4096.0, i / 31.0)));
  return out;
}

void BM_LruCurveOnePass(benchmark::State& state) {
  TierSpec tier = testing::make_tier("hbm", 0, PolicyKind::kLru);
  for (auto _ : state) benchmark::DoNotOptimize(hit_rate_curve(trace(), tier, capacities()));
  state.counters["block_accesses"] = static_cast<double>(block_accesses());
}
BENCHMARK(BM_LruCurveOnePass)->Unit(benchmark::kMillisecond);

void BM_LruReplayPerCapacity(benchmark::State& state) {
  for (auto _ : state) {
    for (int64_t capacity : capacities()) {
      CacheReplay replay({testing::make_tier("hbm", capacity, PolicyKind::kLru)});
      for (const Request& r : trace()) replay.add(r);
      benchmark::DoNotOptimize(replay.result().hits());
    }
  }
}
BENCHMARK(BM_LruReplayPerCapacity)->Unit(benchmark::kMillisecond);

// One policy, one capacity (4,096 blocks, about 7 % of the distinct blocks).
void BM_SinglePolicyReplay(benchmark::State& state) {
  auto policy = static_cast<PolicyKind>(state.range(0));
  for (auto _ : state) {
    CacheReplay replay({testing::make_tier("hbm", 4096, policy)});
    for (const Request& r : trace()) replay.add(r);
    benchmark::DoNotOptimize(replay.result().hits());
  }
  state.SetItemsProcessed(state.iterations() * block_accesses());
  state.SetLabel(policy_name(policy));
}
BENCHMARK(BM_SinglePolicyReplay)
    ->Arg(static_cast<int>(PolicyKind::kLru))
    ->Arg(static_cast<int>(PolicyKind::kLfu))
    ->Arg(static_cast<int>(PolicyKind::kArc))
    ->Arg(static_cast<int>(PolicyKind::kS3Fifo))
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kvtier
