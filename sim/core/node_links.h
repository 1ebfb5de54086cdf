// The links of one serving instance's node, and the route of a copy between two media over them: the
// topology the simulator builds its SimGrid platform from (sim/engine/simgrid/platform.h) and the one
// kvtier-hw serve counts its copies' bytes on, so that both runs name the same links and put the same
// bytes on each.
//
//   dram ─[dram]─[pcie_h2d_i]─> gpu_i        gpu_i ─[pcie_d2h_i]─[dram]─> dram
//   nvme ─[nvme_read]─[dram]─[pcie_h2d_i]─> gpu_i   (with GPUDirect: nvme ─[nvme_read]─[pcie_h2d_i]─> gpu_i)
//   dram ─[dram]─[nvme_write]─> nvme                 remote ─[network]─[pcie_h2d_i]─> gpu_i
//
// Each direction is a link of its own, so loads and stores do not slow each other on PCIe.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "sim/core/hardware.h"
#include "sim/core/medium.h"

namespace kvtier {

struct NodeLink {
  std::string name;      // "dram", "pcie_h2d_0", "pcie_d2h_0", ..., "nvme_read", "nvme_write", "network"
  double bandwidth = 0;  // bytes/s
  double latency = 0;    // s
};

class NodeLinks {
 public:
  // The node of an instance of `gpus` GPUs (tensor parallel) of `hardware`: NVMe links where it has drives,
  // a network link where it has a network; with 0 GPUs, a host without any (a cluster's pool node). Throws
  // ConfigError when the node has fewer GPUs.
  NodeLinks(const HardwareConfig& hardware, int gpus);

  const std::vector<NodeLink>& links() const { return links_; }
  bool has(Medium medium) const;
  // The links (indices into links()) a copy from one medium to another crosses, in order; a copy to or
  // from HBM goes through GPU `gpu`'s PCIe. Throws ConfigError when the node has no such route.
  const std::vector<int>& route(Medium from, Medium to, int gpu = 0) const;
  // The route of a transfer as transfers.csv names it ("<from tier>-><to tier>", transfer_log.h), the
  // tiers' media given by name. Throws ConfigError for a path that does not name two of those tiers.
  const std::vector<int>& route(const std::string& path, const std::map<std::string, Medium>& tier_media,
                                int gpu = 0) const;
  // Every route: (from, to, gpu) -> links; gpu is 0 for routes that do not touch HBM.
  const std::map<std::tuple<Medium, Medium, int>, std::vector<int>>& routes() const { return routes_; }

 private:
  int add_link(const std::string& name, double bandwidth, double latency);

  bool nvme_ = false, remote_ = false;
  std::vector<NodeLink> links_;
  std::map<std::tuple<Medium, Medium, int>, std::vector<int>> routes_;
};

}  // namespace kvtier
