#include "hw/tools/offload_bench.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <random>

#include "hw/store/block_file.h"
#include "hw/store/gpu_device_pages.h"
#include "hw/store/gpu_memory.h"
#include "hw/store/hbm_kv_cache.h"
#include "hw/store/offload_engine.h"
#include "hw/store/page_pool.h"
#include "hw/tools/copy_probe.h"
#include "hw/tools/tool_support.h"

namespace kvtier::hw {
namespace {

constexpr uint64_t kPeakCopyBytes = 64ull << 20;

// Median wall time of `runs` runs of fn (which must wait for its own work).
template <typename Fn>
double median_wall_seconds(Fn fn, int runs = 5) {
  fn();  // warm-up
  std::vector<double> seconds;
  for (int run = 0; run < runs; ++run) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(seconds.begin(), seconds.begin() + runs / 2, seconds.end());
  return seconds[runs / 2];
}

// Pages of `page_bytes` split 1:3 between a bf16-like and a 4-bit-like group, in two halves:
// [0, n) to offload and [n, 2n) to reload, each in shuffled order, with host pages for both.
struct PageSet {
  PageSet(uint64_t page_bytes, uint64_t batch_bytes)
      : n(static_cast<int64_t>(batch_bytes / page_bytes)),
        cache(std::vector<int64_t>{static_cast<int64_t>(page_bytes / 4),
                                   static_cast<int64_t>(page_bytes * 3 / 4)},
              2 * n),
        host(allocate_pinned_region(2 * static_cast<uint64_t>(n) * page_bytes), page_bytes) {
    for (const PageGroup& group : cache.groups()) {
      fill_random_device(group.pool, static_cast<uint64_t>(group.pool_pages * group.page_stride), 23);
    }
    std::mt19937_64 rng(29);
    for (int64_t half = 0; half < 2; ++half) {
      std::vector<int64_t> ids(static_cast<size_t>(n));
      std::iota(ids.begin(), ids.end(), half * n);
      std::shuffle(ids.begin(), ids.end(), rng);
      (half == 0 ? out_ids : in_ids) = ids;
      for (int64_t i = 0; i < n; ++i) (half == 0 ? out_host : in_host).push_back(host.page(half * n + i));
    }
  }
  int64_t n;
  HbmKvCache cache;
  PagePool host;
  std::vector<int64_t> out_ids, in_ids;
  std::vector<std::byte*> out_host, in_host;
};

}  // namespace

std::vector<BenchResult> run_offload_bench(const BenchOptions& options) {
  const std::vector<uint64_t> peak_size = {kPeakCopyBytes};
  double h2d_peak = 0, d2h_peak = 0;
  for (const CopySample& s : measure_host_copies(peak_size)) {
    (s.direction == CopyDirection::kHostToDevice ? h2d_peak : d2h_peak) = s.bytes_per_s;
  }
  const double both_peak = measure_bidirectional_copy(kPeakCopyBytes).bytes_per_s;

  std::vector<BenchResult> results;
  for (uint64_t page_bytes : options.page_sizes) {
    PageSet set(page_bytes, options.batch_bytes);
    OffloadEngine engine(set.cache, {});
    const uint64_t bytes = static_cast<uint64_t>(set.n) * page_bytes;
    const double offload = median_wall_seconds([&] {
      engine.offload(set.out_ids, set.out_host);
      engine.synchronize();
    });
    const double reload = median_wall_seconds([&] {
      engine.reload(set.in_ids, set.in_host);
      engine.synchronize();
    });
    const double both = median_wall_seconds([&] {
      engine.offload(set.out_ids, set.out_host);
      engine.reload(set.in_ids, set.in_host);
      engine.synchronize();
    });
    results.push_back({"offload", page_bytes, bytes, offload, "pinned D2H copy, 64 MiB", d2h_peak, 0.90});
    results.push_back({"reload", page_bytes, bytes, reload, "pinned H2D copy, 64 MiB", h2d_peak, 0.90});
    results.push_back(
        {"both", page_bytes, 2 * bytes, both, "H2D + D2H copies at once, 64 MiB", both_peak, 0.85});
  }
  return results;
}

std::vector<OffloadSample> measure_offload_batches(uint64_t page_bytes,
                                                   std::span<const uint64_t> batch_pages) {
  const uint64_t most = *std::max_element(batch_pages.begin(), batch_pages.end());
  const std::vector<int64_t> group{static_cast<int64_t>(page_bytes)};
  GpuDevicePages device(group, static_cast<int64_t>(most));  // the serving loop's pages and offload engine
  const uint64_t pitch = round_up_to_io(page_bytes);
  MemoryRegion host = device.allocate_host(most * pitch);
  std::vector<int64_t> ids(most);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937_64(37));
  std::vector<std::byte*> host_pages;
  for (uint64_t i = 0; i < most; ++i) host_pages.push_back(host.data() + i * pitch);
  std::vector<OffloadSample> samples;
  for (uint64_t pages : batch_pages) {
    const std::span<const int64_t> batch_ids(ids.data(), pages);
    const std::span<std::byte* const> batch_hosts(host_pages.data(), pages);
    const double offload = median_wall_seconds([&] {
      device.offload(batch_ids, batch_hosts);
      device.synchronize();
    });
    const double reload = median_wall_seconds([&] {
      device.reload(batch_ids, batch_hosts);
      device.synchronize();
    });
    samples.push_back({CopyDirection::kDeviceToHost, page_bytes, pages, offload});
    samples.push_back({CopyDirection::kHostToDevice, page_bytes, pages, reload});
  }
  return samples;
}

nlohmann::json bench_json(const std::vector<BenchResult>& results) {
  nlohmann::json rows = nlohmann::json::array();
  for (const BenchResult& r : results) {
    rows.push_back({{"path", r.path},
                    {"page_bytes", r.page_bytes},
                    {"bytes", r.bytes},
                    {"seconds", r.seconds},
                    {"bytes_per_s", r.bytes_per_s()},
                    {"reference", r.reference},
                    {"reference_bytes_per_s", r.reference_bytes_per_s},
                    {"fraction_of_reference", r.fraction()},
                    {"target_fraction", r.target},
                    {"meets_target", r.meets_target()}});
  }
  return rows;
}

}  // namespace kvtier::hw
