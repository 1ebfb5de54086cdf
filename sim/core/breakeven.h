// Break-even analysis: at what bandwidth does loading a cached prefix beat recomputing it?
//
// Without overlap, a hit costs load(L) + prefill(s | L) and a miss prefill(L + s), for a prefix of L
// cached tokens and s new ones; loading wins above L × bytes_per_token / (prefill(L + s) − prefill(s | L)).
// With layer-wise overlap the load of layer i+1 hides under the compute of layer i:
//   hit = l + (n − 1) × max(l, c) + c   with l = load / n and c = prefill(s | L) / n over n layers,
// which lowers the bandwidth needed. A 4-bit layout moves fewer bytes, so it needs proportionally less.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/cost_model.h"
#include "sim/core/hardware.h"
#include "sim/core/kv_layout.h"
#include "sim/core/medium.h"

namespace kvtier {

// A path a cached prefix can be loaded over, with its effective bandwidth into the GPUs.
struct LoadPath {
  Medium source = Medium::kDram;  // where the prefix is read from: DRAM, NVMe or a remote pool
  std::string name;  // "DRAM over PCIe", "NVMe via DRAM", ...
  double bandwidth = 0;
  double latency = 0;
};

// The path from `source` into the GPUs of `hardware`, aggregated over them (each GPU loads its shard of
// every layer); nullopt where the hardware has no such medium (no NVMe drives, no network) and for HBM,
// which loads from nowhere.
std::optional<LoadPath> load_path(const HardwareConfig& hardware, Medium source);
// The load paths a node offers: DRAM, then NVMe and the remote pool where it has them.
std::vector<LoadPath> load_paths(const HardwareConfig& hardware);

struct PathVerdict {
  std::string path;
  double load_seconds = 0;
  double speedup = 0;  // recompute time / load time; above 1, loading wins
};

struct BreakevenPoint {
  int64_t prefix_tokens = 0;
  double prefill_seconds = 0;  // recomputing the prefix from scratch
  double prefill_tokens_per_s = 0;
  double breakeven_bandwidth = 0;   // loading alone vs recomputing the prefix
  double breakeven_overlapped = 0;  // with layer-wise overlap under the new tokens' prefill
  std::vector<PathVerdict> paths;
};

struct BreakevenRow {
  std::string layout;
  int64_t bytes_per_token = 0;
  std::vector<BreakevenPoint> points;
};

// Throws ConfigError when prefix_tokens + new_tokens leaves int64_t.
BreakevenPoint breakeven_at(const CostModel& cost, int layers, double bytes_per_token, int64_t prefix_tokens,
                            int64_t new_tokens, const std::vector<LoadPath>& paths);

}  // namespace kvtier
