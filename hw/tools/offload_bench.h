// The offload and reload paths against the machine's own limits (`kvtier-hw bench`).
//
// Every path is measured next to its yardstick in the same run:
//   offload (gather + device-to-host) and reload (host-to-device + scatter) of scattered pages of a
//   two-group layout, per page size, against the pinned-copy peak of a 64 MiB copy in that direction;
//   both at once (half the pages each way) against a bidirectional 64 MiB copy pair;
//   the NVMe store's put and get of the offloaded pages against raw O_DIRECT on the store's own file, at
//   its queue depth and I/O size (dd with O_DIRECT on the same disk shown beside it);
//   GPUDirect Storage (cuFile, HBM <-> file) against dd, where the platform has it.
// Targets: >= 90 % one way, >= 85 % both ways, >= 90 % of the raw O_DIRECT rate (GDS: of dd).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "hw/tools/copy_probe.h"
#include "hw/tools/disk_probe.h"

namespace kvtier::hw {

struct BenchOptions {
  std::vector<uint64_t> page_sizes = {16 << 10, 64 << 10, 256 << 10, 1 << 20};
  uint64_t batch_bytes = 1ull << 30;  // bytes moved per direction per measurement
  std::vector<uint64_t> disk_page_sizes = {64 << 10, 1 << 20};
  uint64_t disk_bytes = 1ull << 30;
  std::string directory = ".";  // the disk to measure
  int queue_depth = 8;
};

struct BenchResult {
  std::string path;  // "offload", "reload", "both", "nvme_put", "nvme_get"
  uint64_t page_bytes = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  std::string reference;  // what the rate is compared with
  double reference_bytes_per_s = 0;
  double target = 0;  // required fraction of the reference
  double bytes_per_s() const { return static_cast<double>(bytes) / seconds; }
  double fraction() const { return bytes_per_s() / reference_bytes_per_s; }
  bool meets_target() const { return fraction() >= target; }
};

std::vector<BenchResult> run_offload_bench(const BenchOptions& options);
// Offloads, then reloads, of each batch size in `batch_pages` of scattered pages of `page_bytes` (one page
// group, as a serving cache of that block size has): what `kvtier-hw calibrate` fits the PCIe links to.
std::vector<OffloadSample> measure_offload_batches(uint64_t page_bytes,
                                                   std::span<const uint64_t> batch_pages);
// The NVMe store's put/get per page size against raw O_DIRECT on its own file (the raw rate against dd),
// then GPUDirect Storage where available, against dd.
std::vector<BenchResult> run_disk_bench(const BenchOptions& options);
// cuFile writes and reads of 16 MiB between HBM and a file; prints why and returns nothing without GDS.
std::vector<BenchResult> run_gds_bench(const BenchOptions& options, double dd_write_rate,
                                       double dd_read_rate);

nlohmann::json bench_json(const std::vector<BenchResult>& results);

}  // namespace kvtier::hw
