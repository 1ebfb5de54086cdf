// How long `kvtier validate` takes on 100,000 requests: the comparison alone (in memory) and the whole
// read of both folders plus the comparison. Synthetic runs: log-normal TTFTs, the measured run within a
// few percent of the predicted one, 20,000 transfers on two paths.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "validate/compare/comparison.h"

namespace kvtier::validation {
namespace {

constexpr size_t kRequests = 100'000;

RunFolder synthetic_run(const std::string& name, double skew, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::lognormal_distribution<double> ttft(-1.0, 1.0);
  std::uniform_real_distribution<double> noise(1 - skew, 1 + skew);
  VariantRun v{"run", 3600, name + "/run/requests.csv", {}, {"hbm", "dram"}, {0, 0}, {{"pcie_h2d_0", 1e12}},
               "",    {}};
  v.requests.reserve(kRequests);
  for (size_t i = 0; i < kRequests; ++i) {
    double arrival = 0.03 * static_cast<double>(i);
    double first = arrival + ttft(random) * noise(random);
    v.requests.push_back({i, arrival, first, first + 2.0 * noise(random), first - arrival, 4096, 200, -1, 0, i + 2});
  }
  v.transfers.emplace(TransferRows{{}, true});
  for (size_t i = 0; i < kRequests / 5; ++i) {
    double start = 0.15 * static_cast<double>(i);
    v.transfers->rows.push_back({i % 2 ? "dram->hbm" : "hbm->dram", 1 << 20, start,
                                 start + 0.01 * noise(random), static_cast<int64_t>(5 * i)});
  }
  return {name, {v}};
}

void write_folder(const RunFolder& run, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir / "run");
  std::ofstream(dir / "summary.json")
      << R"({"variants":[{"name":"run","summary":{"window_s":3600,"link_bytes":[{"link":"pcie_h2d_0","bytes":1e12}]}}]})";
  std::ofstream requests(dir / "run/requests.csv");
  requests << "id,arrival_s,first_token_s,completion_s,ttft_s,input_tokens,output_tokens,hit_tokens_hbm,"
              "hit_tokens_dram\n"
           << std::setprecision(9);
  for (const RequestTimes& r : run.variants[0].requests) {
    requests << r.id << ',' << r.arrival_s << ',' << r.first_token_s << ',' << r.completion_s << ','
             << r.ttft_s << ',' << r.input_tokens << ',' << r.output_tokens << ",1024,512\n";
  }
  std::ofstream transfers(dir / "run/transfers.csv");
  write_transfers_csv(transfers, run.variants[0].transfers->rows);
}

void BM_CompareInMemory(benchmark::State& state) {
  RunFolder predicted = synthetic_run("predicted", 0.0, 1), measured = synthetic_run("measured", 0.03, 1);
  for (auto _ : state) benchmark::DoNotOptimize(compare_runs(predicted, measured, Targets{}));
  state.SetItemsProcessed(state.iterations() * kRequests);
}
BENCHMARK(BM_CompareInMemory)->Unit(benchmark::kMillisecond);

void BM_ReadBothFoldersAndCompare(benchmark::State& state) {
  std::filesystem::path root = std::filesystem::temp_directory_path() / "kvtier-validate-bench";
  std::filesystem::remove_all(root);
  write_folder(synthetic_run("predicted", 0.0, 1), root / "predicted");
  write_folder(synthetic_run("measured", 0.03, 1), root / "measured");
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        compare_runs(read_run_folder(root / "predicted"), read_run_folder(root / "measured"), Targets{}));
  }
  state.SetItemsProcessed(state.iterations() * kRequests);
  std::filesystem::remove_all(root);
}
BENCHMARK(BM_ReadBothFoldersAndCompare)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kvtier::validation
