// NVMe store throughput against the file system's own O_DIRECT rate.
//
// BM_RawDirectWrite / BM_RawDirectRead move the same bytes as one sequential O_DIRECT transfer per
// 4 MiB (what `dd oflag=direct bs=4M` does); BM_StorePut / BM_StoreGet move them as a batch of
// pages through the store (checksums, slot allocation, I/O merging, queue depth);
// BM_StoreFileRawWrite / BM_StoreFileRawRead move them on the store's own file at the store's queue
// depth and merged I/O size, through the same I/O path, with nothing else: the store's target is
// >= 90 % of that rate. Arguments: page bytes, queue depth, I/O path (0 worker threads, 1 io_uring where
// the kernel allows it; the label says which ran), file mode (0 O_DIRECT; 1 buffered, through the page
// cache: memory-speed "I/O" that exposes the store's CPU cost where the disk is slow). Set KVTIER_BENCH_DIR to put the files on the disk you
// want to measure; a 256 MiB file read again and again is what a virtual disk's host caches.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include "hw/store/io_queue.h"
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

// Twice the slots of one batch: a put that overwrites keys writes the new copies before freeing the old
// ones. The raw passes write the batch's own bytes into the first half of the slots.
struct StoreFixture {
  explicit StoreFixture(benchmark::State& state)
      : page(static_cast<uint64_t>(state.range(0))),
        pages(kBatchBytes / page),
        options{.block_bytes = page,
                .capacity_blocks = 2 * pages,
                .queue_depth = int(state.range(1)),
                .io_path = state.range(2) == 0 ? IoPath::kThreads : IoPath::kAuto},
        data(random_region(kBatchBytes)),
        raw_queue(options.io_path, options.queue_depth, NvmeStore::ring_threads(options)) {
    const IoMode mode = state.range(3) == 0 ? IoMode::kDirect : IoMode::kBuffered;
    auto owned = std::make_unique<DirectFile>(bench_file("store"), NvmeStore::file_bytes(options), mode);
    file = owned.get();
    store = std::make_unique<NvmeStore>(std::move(owned), options);
    for (uint64_t i = 0; i < pages; ++i) writes.push_back({i, {data.data() + i * page, page}});
    for (uint64_t i = 0; i < pages; ++i) reads.push_back({i, {data.data() + i * page, page}});
    const uint64_t io_bytes = std::max<uint64_t>(1, options.max_io_bytes / page) * page;
    for (uint64_t done = 0; done < kBatchBytes; done += io_bytes) {
      chunks.push_back({data.data() + done, std::min(io_bytes, kBatchBytes - done)});
    }
    for (size_t i = 0; i < chunks.size(); ++i) {
      raw_requests.push_back({file, kStoreHeaderBytes + i * io_bytes, {&chunks[i], 1}});
    }
    // Write every slot once: a preallocated file's first write to a range also converts its extents,
    // which neither the store's nor the raw timed passes should pay.
    for (uint64_t offset = kStoreHeaderBytes; offset < file->size(); offset += io_bytes) {
      const iovec buffer{data.data(), std::min(io_bytes, file->size() - offset)};
      file->write_at(offset, {&buffer, 1});
    }
    state.SetLabel(std::string(store->io_path()) + (mode == IoMode::kDirect ? "" : " page-cached"));
  }
  void raw(IoDirection direction) {
    const auto nothing = [](size_t) {};
    raw_queue.run(direction, raw_requests, nothing, nothing);
  }
  uint64_t page;
  uint64_t pages;
  NvmeStoreOptions options;
  MemoryRegion data;
  IoQueue raw_queue;
  DirectFile* file = nullptr;  // owned by the store
  std::unique_ptr<NvmeStore> store;
  std::vector<BlockWrite> writes;
  std::vector<BlockRead> reads;
  std::vector<iovec> chunks;
  std::vector<IoRequest> raw_requests;
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

void BM_StoreFileRawWrite(benchmark::State& state) {
  StoreFixture fixture(state);
  for (auto _ : state) fixture.raw(IoDirection::kWrite);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBatchBytes));
}

void BM_StoreFileRawRead(benchmark::State& state) {
  StoreFixture fixture(state);
  fixture.raw(IoDirection::kWrite);
  for (auto _ : state) fixture.raw(IoDirection::kRead);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBatchBytes));
}

void page_sizes(benchmark::internal::Benchmark* bench) {
  for (int64_t path : {0, 1}) {
    for (int64_t page : {16 << 10, 64 << 10, 1 << 20}) {
      for (int64_t depth : {1, 4, 8}) bench->Args({page, depth, path, 0});
    }
    for (int64_t page : {64 << 10, 1 << 20}) bench->Args({page, 8, path, 1});
  }
}

BENCHMARK(BM_RawDirectWrite)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_RawDirectRead)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_StorePut)->Apply(page_sizes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_StoreGet)->Apply(page_sizes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_StoreFileRawWrite)->Apply(page_sizes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_StoreFileRawRead)->Apply(page_sizes)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace kvtier::hw
