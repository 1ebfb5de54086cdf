// kvtier-hw replay: a trace through the TieredStore on the GPU, beside the analytic cache model.
//
// Each request is admitted (its hits promoted from DRAM and NVMe, room made by offloading, writing to
// NVMe and dropping, all as the cache model decides), optionally checked byte for byte, and released, as
// the fast hit-rate mode does (`kvtier hitrate`: no timing between requests, a request longer than HBM
// keeps its first capacity-many blocks). The tiers come from a tier file, the one `kvtier hitrate --tiers`
// reads (load_store_tiers: HBM, then DRAM and NVMe where it has them, below HBM in tier 0's layout or, under
// bf16, in one int4 layout; --verify then checks patterns int4 holds exactly). The same requests also go
// through a plain TieredCache of the same tiers (CacheReplay); the hits per tier the store observed must
// equal the model's. The replay runs on any DevicePages: kvtier-hw's on the GPU, its tests' on the CPU
// reference (HostMemoryPages).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sim/cache/cache_event.h"
#include "sim/cache/hit_rate.h"
#include "hw/store/device_pages.h"
#include "hw/store/transfer_batch.h"

namespace kvtier::hw {

struct ReplayOptions {
  std::string trace;  // empty: the default synthetic agent workload
  std::string trace_format = "auto";
  std::string model = "llama-3.1-8b";
  std::string tiers = "replay-small";  // a tier file or a name in configs/tiers, as `kvtier hitrate --tiers`
  // 0: an LMCache tier file's chunk_size, else the trace's own (512 Mooncake, 16 Bailian, 256 native)
  int64_t block_tokens = 0;
  int64_t spare_blocks = 64;  // per tier, beyond its capacity, so that copies batch (tiered_store.h)
  std::string directory = ".";
  int64_t requests = 200;  // 0: all
  uint64_t seed = 1;       // of the synthetic workload
  bool verify = false;     // write block patterns into placed pages, check every request's pages
};

struct ReplayReport {
  std::string trace;  // the file, or "synthetic (agent-default, seed N)"
  int64_t block_tokens = 0;
  uint64_t page_bytes = 0;
  std::vector<TierSpec> tiers;
  int64_t requests = 0;
  std::vector<HitCount> store_hits;  // per tier, observed by the store
  ReplayResult model;                // the analytic cache's replay of the same requests
  TrafficTotals events;              // cache events the store executed
  TransferTotals transfers{};        // what the store copied, per path
  int64_t batches = 0;
  std::vector<double> admit_seconds;  // per request: the wall time of its copies (admit and release)
  int64_t verified_blocks = 0;
  int64_t mismatched_blocks = 0;

  bool hits_agree() const;
};

// The HBM side of the store: `pages` pages, each one block in `page_bytes` per layer group
// (layout_page_bytes()).
using DevicePagesMaker =
    std::function<std::unique_ptr<DevicePages>(std::span<const int64_t> page_bytes, int64_t pages)>;

// Throws ConfigError for bad input (unknown model, a tier file the store cannot back, a bad trace),
// StoreError / GpuError when a tier fails.
ReplayReport run_replay(const ReplayOptions& options, const DevicePagesMaker& make_device);
// On the GPU (GpuDevicePages); built with KVTIER_GPU only (store_replay_gpu.cpp).
ReplayReport run_replay(const ReplayOptions& options);

}  // namespace kvtier::hw
