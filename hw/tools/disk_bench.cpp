// The disk half of `kvtier-hw bench`: the NVMe store against raw O_DIRECT on its own file, and GPUDirect
// Storage, with dd on the same disk as the outside yardstick.
//
// For each page size the store's file is also driven raw: plain transfers at the store's queue depth and
// merged I/O size, through the same I/O path (io_uring or worker threads), without checksums or an index.
// The store is held to >= 90 % of that (issue 17); the raw rate itself is shown against dd (queue depth 1,
// 4 MiB). A disk slower than a Gen5 drive (raw reads below 8 GB/s) cannot show whether the store keeps up
// with one, so then a 256 MiB file read again right after it was written (which a virtual disk's host
// serves from its cache) stands in, and the rows say which file they measured.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <tuple>

#include "hw/store/block_checksum.h"
#include "hw/store/gds_file.h"
#include "hw/store/gpu_memory.h"
#include "hw/store/nvme_store.h"
#include "hw/store/page_pool.h"
#include "hw/tools/offload_bench.h"
#include "hw/tools/tool_support.h"
#include "sim/core/units.h"

namespace kvtier::hw {
namespace {

constexpr int kRounds = 3;
constexpr uint64_t kDdBlock = 4ull << 20;
constexpr double kFastDriveBytesPerS = 8e9;
constexpr uint64_t kCachedFileBytes = 256ull << 20;

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

NvmeStoreOptions store_options(const BenchOptions& options, uint64_t page_bytes, uint64_t pages) {
  // Twice the slots of one batch: a put that overwrites keys writes the new copies first.
  return {.block_bytes = page_bytes, .capacity_blocks = 2 * pages, .queue_depth = options.queue_depth};
}

// One store per page size over `batch_bytes` of pinned host pages filled with random bytes, and a handle
// on the store's file for the raw passes. A raw write puts the pages' own bytes into the first half of
// the slots, so whatever the store holds there stays what it was.
struct StoreUnderTest {
  StoreUnderTest(const BenchOptions& options, uint64_t page_bytes, uint64_t batch_bytes, const std::string& name)
      : page_bytes(page_bytes),
        pages(batch_bytes / page_bytes),
        host(allocate_pinned_region(pages * page_bytes), page_bytes),
        io_bytes(store_io_bytes(page_bytes, store_options(options, page_bytes, pages).max_io_bytes,
                                pages * page_bytes)) {
    const NvmeStoreOptions config = store_options(options, page_bytes, pages);
    auto owned = std::make_unique<DirectFile>(scratch(options, name), NvmeStore::file_bytes(config), IoMode::kDirect);
    file = owned.get();
    store = std::make_unique<NvmeStore>(std::move(owned), config);
    raw_queue = std::make_unique<IoQueue>(config.io_path, config.queue_depth, NvmeStore::ring_threads(config));
    std::mt19937_64 rng(31);
    auto* words = reinterpret_cast<uint64_t*>(host.page(0));
    for (uint64_t i = 0; i < pages * page_bytes / 8; ++i) words[i] = rng();
    for (uint64_t i = 0; i < pages; ++i) {
      writes.push_back({i, {host.page(i), page_bytes}});
      reads.push_back({i, {host.page(i), page_bytes}});
    }
    // Both halves of the slots written once: a preallocated file's first write to a range also converts
    // its extents, which no timed pass should pay.
    for (uint64_t half = 0; half < 2; ++half) {
      time_raw_transfers(*file, DiskOp::kWrite, kStoreHeaderBytes + half * bytes(), {host.page(0), bytes()},
                         io_bytes, *raw_queue);
    }
  }
  double raw(DiskOp op) {
    return time_raw_transfers(*file, op, kStoreHeaderBytes, {host.page(0), pages * page_bytes}, io_bytes, *raw_queue)
        .seconds;
  }
  void round() {
    raw_write_seconds.push_back(raw(DiskOp::kWrite));
    raw_read_seconds.push_back(raw(DiskOp::kRead));
    put_seconds.push_back(seconds_of([&] { store->put(writes); }));
    get_seconds.push_back(seconds_of([&] { store->get(reads); }));
  }
  uint64_t bytes() const { return pages * page_bytes; }
  double raw_read_rate() const { return static_cast<double>(bytes()) / median(raw_read_seconds); }

  uint64_t page_bytes;
  uint64_t pages;
  PagePool host;
  uint64_t io_bytes;
  DirectFile* file = nullptr;  // owned by the store
  std::unique_ptr<NvmeStore> store;
  std::unique_ptr<IoQueue> raw_queue;
  std::vector<BlockWrite> writes;
  std::vector<BlockRead> reads;
  std::vector<double> raw_write_seconds, raw_read_seconds, put_seconds, get_seconds;
};

// The store's rows against its raw passes on the same file; `medium` says which file that was.
void add_store_rows(const StoreUnderTest& s, const std::string& medium, std::vector<BenchResult>& results) {
  const std::string raw = "raw O_DIRECT " + format_bytes(static_cast<double>(s.io_bytes)) + " I/Os at QD " +
                          std::to_string(s.raw_queue->queue_depth()) + " (" + s.raw_queue->path_name() +
                          "), same file: " + medium;
  const double raw_write_rate = static_cast<double>(s.bytes()) / median(s.raw_write_seconds);
  results.push_back({"nvme_put", s.page_bytes, s.bytes(), median(s.put_seconds), raw + ", writes",
                     raw_write_rate, 0.90});
  results.push_back({"nvme_get", s.page_bytes, s.bytes(), median(s.get_seconds), raw + ", reads",
                     s.raw_read_rate(), 0.90});
}

// The raw passes against dd (an outside check on the yardstick; no target).
void add_raw_rows(const StoreUnderTest& s, const DdRun& dd_write, double dd_write_rate, const DdRun& dd_read,
                  double dd_read_rate, std::vector<BenchResult>& results) {
  results.push_back({"raw_write", s.io_bytes, s.bytes(), median(s.raw_write_seconds), dd_write.command,
                     dd_write_rate, 0});
  results.push_back({"raw_read", s.io_bytes, s.bytes(), median(s.raw_read_seconds), dd_read.command,
                     dd_read_rate, 0});
}

// The same comparison on a file small enough for a virtual disk's host to cache, read again right
// after it was written: a stand-in for a fast drive where the disk is slow.
void run_cached_stand_in(const BenchOptions& options, std::vector<BenchResult>& results) {
  std::vector<std::unique_ptr<StoreUnderTest>> stores;
  for (uint64_t page_bytes : options.disk_page_sizes) {
    stores.push_back(std::make_unique<StoreUnderTest>(options, page_bytes, kCachedFileBytes,
                                                      std::to_string(page_bytes) + ".cached.store"));
    stores.back()->raw(DiskOp::kWrite);
    stores.back()->raw(DiskOp::kRead);
  }
  for (int round = 0; round < kRounds; ++round) {
    for (auto& s : stores) s->round();
  }
  for (const auto& s : stores) {
    const bool fast = s->raw_read_rate() >= kFastDriveBytesPerS;
    std::printf("host-cached stand-in, %s pages: raw reads %s%s\n",
                format_bytes(static_cast<double>(s->page_bytes)).c_str(), rate_text(s->raw_read_rate()).c_str(),
                fast ? "" : " (below 8 GB/s too: this host does not cache the file; compared at that rate)");
    add_store_rows(*s, "host-cached 256MiB file", results);
  }
}

}  // namespace

std::vector<BenchResult> run_disk_bench(const BenchOptions& options) {
  std::vector<std::unique_ptr<StoreUnderTest>> stores;
  for (uint64_t page_bytes : options.disk_page_sizes) {
    stores.push_back(std::make_unique<StoreUnderTest>(options, page_bytes, options.disk_bytes,
                                                      std::to_string(page_bytes) + ".store"));
  }
  std::printf("NVMe store I/O path: %s; checksum: CRC-32C (%s)\n", stores.front()->store->io_path(),
              crc32c_implementation());
  // A virtual disk's speed drifts from second to second (host caching), so dd, the raw passes and the
  // store take turns, three rounds, and medians are compared.
  std::vector<double> dd_write_seconds, dd_read_seconds;
  DdRun dd_write, dd_read;
  for (int round = 0; round < kRounds; ++round) {
    std::tie(dd_write, dd_read) = run_dd(options.directory, kDdBlock, options.disk_bytes / kDdBlock);
    dd_write_seconds.push_back(dd_write.seconds);
    dd_read_seconds.push_back(dd_read.seconds);
    for (auto& s : stores) s->round();
  }
  const double dd_write_rate = static_cast<double>(dd_write.bytes) / median(dd_write_seconds);
  const double dd_read_rate = static_cast<double>(dd_read.bytes) / median(dd_read_seconds);
  std::vector<BenchResult> results;
  double fastest_raw_read = 0;
  for (const auto& s : stores) {
    add_raw_rows(*s, dd_write, dd_write_rate, dd_read, dd_read_rate, results);
    add_store_rows(*s, "the disk under --dir", results);
    fastest_raw_read = std::max(fastest_raw_read, s->raw_read_rate());
  }
  stores.clear();
  if (fastest_raw_read < kFastDriveBytesPerS) {
    std::printf("the disk under %s reads at %s raw, below a Gen5 drive's 8 GB/s: a host-cached 256 MiB file "
                "stands in for a fast drive in the rows marked so\n",
                options.directory.c_str(), rate_text(fastest_raw_read).c_str());
    run_cached_stand_in(options, results);
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
