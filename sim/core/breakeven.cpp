#include "sim/core/breakeven.h"

#include <algorithm>

#include "sim/core/checked_math.h"

namespace kvtier {
namespace {

// Load time at which the layer-wise pipeline's hit time equals the miss time.
double overlapped_breakeven_load(double miss, double suffix, int layers) {
  double per_layer_compute = suffix / layers;
  // While loading is the shorter stage, hit = load / n + suffix.
  double load_if_compute_bound = (miss - suffix) * layers;
  if (load_if_compute_bound / layers <= per_layer_compute) return load_if_compute_bound;
  // Otherwise loading bounds the pipeline: hit = load + suffix / n.
  return miss - per_layer_compute;
}

}  // namespace

std::optional<LoadPath> load_path(const HardwareConfig& hw, Medium source) {
  double pcie = hw.gpu.count * hw.pcie_h2d.bandwidth;
  switch (source) {
    case Medium::kHbm:
      return std::nullopt;
    case Medium::kDram:
      return LoadPath{source, "DRAM over PCIe", std::min(pcie, hw.dram_bandwidth), hw.pcie_h2d.latency};
    case Medium::kNvme: {
      if (hw.nvme.drives == 0) return std::nullopt;
      double disks = hw.nvme.node_read_bandwidth();
      std::string name = hw.nvme.gpudirect ? "NVMe (GPUDirect)" : "NVMe via DRAM";
      return LoadPath{source, name, std::min(disks, pcie), hw.nvme.latency + hw.pcie_h2d.latency};
    }
    case Medium::kRemote:
      if (hw.network.bandwidth <= 0) return std::nullopt;
      return LoadPath{source, "remote pool", std::min(hw.network.bandwidth, pcie), hw.network.latency};
  }
  return std::nullopt;
}

std::vector<LoadPath> load_paths(const HardwareConfig& hw) {
  std::vector<LoadPath> paths;
  for (Medium source : {Medium::kDram, Medium::kNvme, Medium::kRemote}) {
    if (std::optional<LoadPath> path = load_path(hw, source)) paths.push_back(*path);
  }
  return paths;
}

BreakevenPoint breakeven_at(const CostModel& cost, int layers, double bytes_per_token, int64_t prefix_tokens,
                            int64_t new_tokens, const std::vector<LoadPath>& paths) {
  BreakevenPoint p;
  p.prefix_tokens = prefix_tokens;
  p.prefill_seconds = cost.prefill_seconds(0, prefix_tokens);
  p.prefill_tokens_per_s = static_cast<double>(prefix_tokens) / p.prefill_seconds;
  double bytes = bytes_per_token * static_cast<double>(prefix_tokens);
  std::optional<int64_t> turn_tokens = checked_add(prefix_tokens, new_tokens);
  if (!turn_tokens) {
    throw ConfigError("break-even: a prefix of " + std::to_string(prefix_tokens) + " tokens plus " +
                      std::to_string(new_tokens) + " new ones exceeds " + std::to_string(kMaxCount) +
                      " tokens");
  }
  double miss = cost.prefill_seconds(0, *turn_tokens);
  double suffix = cost.prefill_seconds(prefix_tokens, new_tokens);
  p.breakeven_bandwidth = bytes / (miss - suffix);
  p.breakeven_overlapped = bytes / overlapped_breakeven_load(miss, suffix, layers);
  for (const LoadPath& path : paths) {
    double load = path.latency + bytes / path.bandwidth;
    p.paths.push_back({path.name, load, p.prefill_seconds / load});
  }
  return p;
}

}  // namespace kvtier
