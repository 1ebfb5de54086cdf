// How long pricing one step's attention takes: the simulator prices every engine step, and a serving run
// has hundreds of thousands of them. Steps of a Llama-3.1-8B-like shape (8 KV heads, ratio 4) on an H200's
// 132 multiprocessors; the costs are of the order kvtier-hw calibrate fits.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "sim/core/attention_cost.h"

namespace kvtier {
namespace {

const AttentionCosts kH200{
    .query_rows = 128,
    .multiprocessors = 132,
    .unsplit = {.key_tile = 128, .slots = 132, .launch_s = 8e-6, .block_s = 2e-6, .key_tile_s = 2.2e-6},
    .split = {.key_tile = 64, .slots = 132, .launch_s = 12e-6, .block_s = 2e-6, .key_tile_s = 2.05e-6}};

void run(benchmark::State& state, const std::vector<AttentionSequence>& step,
         const AttentionCosts& costs = kH200) {
  for (auto _ : state) benchmark::DoNotOptimize(attention_launch_seconds(costs, 8, 4, step));
}

// 256 decodes at contexts drawn from 1K to 40K.
void BM_Decode256MixedContexts(benchmark::State& state) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> context(1024, 40960);
  std::vector<AttentionSequence> step;
  for (int i = 0; i < 256; ++i) step.push_back({context(rng), 1});
  run(state, step);
}
BENCHMARK(BM_Decode256MixedContexts);

// A 16K-token prefill chunk after 64K cached tokens: 512 query tiles of distinct key counts.
void BM_Chunk16KAfter64K(benchmark::State& state) {
  run(state, {{65536, 16384}});
}
BENCHMARK(BM_Chunk16KAfter64K);

// A 2K-token chunk after 30K beside 64 decodes at contexts from 1K to 40K.
void BM_MixedChunkAndDecodes(benchmark::State& state) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int64_t> context(1024, 40960);
  std::vector<AttentionSequence> step{{30720, 2048}};
  for (int i = 0; i < 64; ++i) step.push_back({context(rng), 1});
  run(state, step);
}
BENCHMARK(BM_MixedChunkAndDecodes);

// The scheduler's order: 64 decodes as above, then the chunk, without (0) and with (1) a cost for the
// blocks past each decode's one query tile (63 × 8 of them a decode), as kvtier-hw calibrate fits it.
void BM_DecodesThenChunk(benchmark::State& state) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int64_t> context(1024, 40960);
  std::vector<AttentionSequence> step;
  for (int i = 0; i < 64; ++i) step.push_back({context(rng), 1});
  step.push_back({30720, 2048});
  AttentionCosts costs = kH200;
  costs.unsplit.empty_block_s = state.range(0) == 0 ? 0 : 0.26e-6;
  run(state, step, costs);
}
BENCHMARK(BM_DecodesThenChunk)->Arg(0)->Arg(1);

// 8 decodes at 32K: the split kernel, 320 blocks.
void BM_Decode8At32K(benchmark::State& state) {
  run(state, std::vector<AttentionSequence>(8, {32768, 1}));
}
BENCHMARK(BM_Decode8At32K);

}  // namespace
}  // namespace kvtier
