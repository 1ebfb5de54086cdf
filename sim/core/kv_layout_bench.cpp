// How long the arithmetic behind `kvtier kv --model all` takes: load every built-in model card and build
// every preset layout. The target is the whole command under 50 ms.
#include <benchmark/benchmark.h>

#include "sim/core/config_files.h"
#include "sim/core/kv_layout.h"

namespace kvtier {
namespace {

void BM_AllCardsAllPresets(benchmark::State& state) {
  for (auto _ : state) {
    int64_t total = 0;
    for (const std::string& name : embedded_names("models")) {
      ModelCard model = parse_model_card(load_config(name, "models"));
      for (const std::string& preset : kv_preset_names()) {
        if (model.attention == AttentionKind::kMla && preset.starts_with("turboquant")) continue;
        total += resolve_kv_layout(model, preset).bytes_per_token();
      }
    }
    benchmark::DoNotOptimize(total);
  }
}
BENCHMARK(BM_AllCardsAllPresets)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kvtier
