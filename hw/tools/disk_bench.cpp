// The disk half of `kvtier-hw bench`: the NVMe store and GPUDirect Storage against dd on the same disk.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <tuple>

#include "hw/store/gds_file.h"
#include "hw/store/gpu_memory.h"
#include "hw/store/nvme_store.h"
#include "hw/tools/offload_bench.h"
#include "hw/store/page_pool.h"
#include "hw/tools/tool_support.h"

namespace kvtier::hw {
namespace {

constexpr int kRounds = 3;
constexpr uint64_t kDdBlock = 4ull << 20;

template <typename Fn>
double seconds_of(Fn fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

std::string scratch(const BenchOptions& options, const std::string& name) {
  return (std::filesystem::path(options.directory) /
          ("kvtier-bench-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

// One store per page size, with its pinned host pages filled with random bytes.
struct StoreUnderTest {
  StoreUnderTest(const BenchOptions& options, uint64_t page_bytes)
      : page_bytes(page_bytes),
        pages(options.disk_bytes / page_bytes),
        host(allocate_pinned_region(pages * page_bytes), page_bytes),
        // Twice the slots of one batch: a put that overwrites keys writes the new copies first.
        store(NvmeStore::create(
            scratch(options, std::to_string(page_bytes) + ".store"),
            {.block_bytes = page_bytes, .capacity_blocks = 2 * pages, .queue_depth = options.queue_depth})) {
    std::mt19937_64 rng(31);
    auto* words = reinterpret_cast<uint64_t*>(host.page(0));
    for (uint64_t i = 0; i < pages * page_bytes / 8; ++i) words[i] = rng();
    for (uint64_t i = 0; i < pages; ++i) {
      writes.push_back({i, {host.page(i), page_bytes}});
      reads.push_back({i, {host.page(i), page_bytes}});
    }
  }
  uint64_t page_bytes;
  uint64_t pages;
  PagePool host;
  std::unique_ptr<NvmeStore> store;
  std::vector<BlockWrite> writes;
  std::vector<BlockRead> reads;
  std::vector<double> put_seconds, get_seconds;
};

}  // namespace

std::vector<BenchResult> run_disk_bench(const BenchOptions& options) {
  std::vector<std::unique_ptr<StoreUnderTest>> stores;
  for (uint64_t page_bytes : options.disk_page_sizes)
    stores.push_back(std::make_unique<StoreUnderTest>(options, page_bytes));
  // A virtual disk's speed drifts from second to second (host caching), so dd and the store take
  // turns, three rounds, and medians are compared.
  std::vector<double> dd_write_seconds, dd_read_seconds;
  DdRun dd_write, dd_read;
  for (int round = 0; round < kRounds; ++round) {
    std::tie(dd_write, dd_read) = run_dd(options.directory, kDdBlock, options.disk_bytes / kDdBlock);
    dd_write_seconds.push_back(dd_write.seconds);
    dd_read_seconds.push_back(dd_read.seconds);
    for (auto& s : stores) {
      s->put_seconds.push_back(seconds_of([&] { s->store->put(s->writes); }));
      s->get_seconds.push_back(seconds_of([&] { s->store->get(s->reads); }));
    }
  }
  const double dd_write_rate = static_cast<double>(dd_write.bytes) / median(dd_write_seconds);
  const double dd_read_rate = static_cast<double>(dd_read.bytes) / median(dd_read_seconds);
  std::vector<BenchResult> results;
  for (const auto& s : stores) {
    const uint64_t bytes = s->pages * s->page_bytes;
    results.push_back(
        {"nvme_put", s->page_bytes, bytes, median(s->put_seconds), dd_write.command, dd_write_rate, 0.90});
    results.push_back(
        {"nvme_get", s->page_bytes, bytes, median(s->get_seconds), dd_read.command, dd_read_rate, 0.90});
  }
  for (const BenchResult& r : run_gds_bench(options, dd_write_rate, dd_read_rate)) results.push_back(r);
  return results;
}

std::vector<BenchResult> run_gds_bench(const BenchOptions& options, double dd_write_rate,
                                       double dd_read_rate) {
  std::unique_ptr<GdsFile> file;
  try {
    file = GdsFile::open(scratch(options, "gds"), options.disk_bytes);
  } catch (const GdsUnavailable& why) {
    std::printf("GPUDirect Storage not used: %s; NVMe traffic goes through pinned DRAM\n", why.what());
    return {};
  }
  MemoryRegion device = allocate_device_region(options.disk_bytes);
  fill_random_device(device.data(), options.disk_bytes, 37);
  const uint64_t chunk = 16ull << 20;
  auto pass = [&](bool write) {
    return seconds_of([&] {
      for (uint64_t offset = 0; offset < options.disk_bytes; offset += chunk) {
        const uint64_t bytes = std::min(chunk, options.disk_bytes - offset);
        if (write) {
          file->write(offset, device.data() + offset, bytes);
        } else {
          file->read(offset, device.data() + offset, bytes);
        }
      }
    });
  };
  const double write = pass(true);
  const double read = pass(false);
  return {
      {"gds_write", chunk, options.disk_bytes, write, "dd oflag=direct (median above)", dd_write_rate, 0.90},
      {"gds_read", chunk, options.disk_bytes, read, "dd iflag=direct (median above)", dd_read_rate, 0.90}};
}

}  // namespace kvtier::hw
