// NVMe store throughput against the file system's own O_DIRECT rate.
//
// BM_RawDirectWrite / BM_RawDirectRead move the same bytes as one sequential O_DIRECT transfer per
// 4 MiB (what `dd oflag=direct bs=4M` does); BM_StorePut / BM_StoreGet move them as a batch of
// pages through the store (checksums, slot allocation, I/O merging, queue depth). The store's target
// is >= 90 % of the raw rate. Set KVTIER_BENCH_DIR to put the files on the disk you want to measure.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include "hw/store/memory_region.h"
#include "hw/store/nvme_store.h"

namespace kvtier::hw {
namespace {

constexpr uint64_t kBatchBytes = 256ull << 20;

std::string bench_file(const char* name) {
  const char* dir = std::getenv("KVTIER_BENCH_DIR");
  const std::filesystem::path base = dir != nullptr ? dir : std::filesystem::temp_directory_path().string();
  return (base / ("kvtier-bench-" + std::to_string(::getpid()) + "-" + name)).string();
}

MemoryRegion random_region(uint64_t bytes) {
  MemoryRegion region = allocate_host_region(bytes);
  std::mt19937_64 rng(1);
  auto* words = reinterpret_cast<uint64_t*>(region.data());
  for (uint64_t i = 0; i < bytes / 8; ++i) words[i] = rng();
  return region;
}

enum class RawIo { kWrite, kRead };

// The whole batch through the file in 4 MiB O_DIRECT I/Os, one at a time: the floor the store is held to.
void raw_direct_io(benchmark::State& state, RawIo io) {
  DirectFile file(bench_file("raw"), kBatchBytes, IoMode::kDirect);
  MemoryRegion data = random_region(kBatchBytes);
  const uint64_t chunk = 4ull << 20;
  for (auto _ : state) {
    for (uint64_t offset = 0; offset < kBatchBytes; offset += chunk) {
      const iovec buffer{data.data() + offset, chunk};
      if (io == RawIo::kWrite) {
        file.write_at(offset, {&buffer, 1});
      } else {
        file.read_at(offset, {&buffer, 1});
      }
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBatchBytes));
}

void BM_RawDirectWrite(benchmark::State& state) { raw_direct_io(state, RawIo::kWrite); }
void BM_RawDirectRead(benchmark::State& state) { raw_direct_io(state, RawIo::kRead); }

// Arguments: page bytes, queue depth. Twice the slots of one batch: a put that overwrites keys writes
// the new copies before freeing the old ones.
struct StoreFixture {
  explicit StoreFixture(const benchmark::State& state)
      : page(static_cast<uint64_t>(state.range(0))),
        pages(kBatchBytes / page),
        store(NvmeStore::create(
            bench_file("store"),
            {.block_bytes = page, .capacity_blocks = 2 * pages, .queue_depth = int(state.range(1))})),
        data(random_region(kBatchBytes)) {
    for (uint64_t i = 0; i < pages; ++i) writes.push_back({i, {data.data() + i * page, page}});
    for (uint64_t i = 0; i < pages; ++i) reads.push_back({i, {data.data() + i * page, page}});
  }
  uint64_t page;
  uint64_t pages;
  std::unique_ptr<NvmeStore> store;
  MemoryRegion data;
  std::vector<BlockWrite> writes;
  std::vector<BlockRead> reads;
};

void BM_StorePut(benchmark::State& state) {
  StoreFixture fixture(state);
  for (auto _ : state) fixture.store->put(fixture.writes);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBatchBytes));
}

void BM_StoreGet(benchmark::State& state) {
  StoreFixture fixture(state);
  fixture.store->put(fixture.writes);
  for (auto _ : state) fixture.store->get(fixture.reads);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBatchBytes));
}

void page_sizes(benchmark::internal::Benchmark* bench) {
  for (int64_t page : {16 << 10, 64 << 10, 1 << 20}) {
    for (int64_t depth : {1, 4}) bench->Args({page, depth});
  }
}

BENCHMARK(BM_RawDirectWrite)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_RawDirectRead)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_StorePut)->Apply(page_sizes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_StoreGet)->Apply(page_sizes)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace kvtier::hw
