#include "sim/core/node_links.h"

#include "sim/core/config.h"

namespace kvtier {

int NodeLinks::add_link(const std::string& name, double bandwidth, double latency) {
  links_.push_back({name, bandwidth, latency});
  return static_cast<int>(links_.size()) - 1;
}

NodeLinks::NodeLinks(const HardwareConfig& hw, int gpus) {
  if (gpus < 0 || gpus > hw.gpu.count) {  // 0: a host without GPUs (a cluster's pool node)
    throw ConfigError("instance.gpus: " + std::to_string(gpus) + " GPUs do not fit a node of " +
                      std::to_string(hw.gpu.count));
  }
  const int dram = add_link("dram", hw.dram_bandwidth, 0);
  std::vector<int> h2d, d2h;
  for (int g = 0; g < gpus; ++g) {
    const std::string id = std::to_string(g);
    h2d.push_back(add_link("pcie_h2d_" + id, hw.pcie_h2d.bandwidth, hw.pcie_h2d.latency));
    d2h.push_back(add_link("pcie_d2h_" + id, hw.pcie_d2h.bandwidth, hw.pcie_d2h.latency));
    routes_[{Medium::kDram, Medium::kHbm, g}] = {dram, h2d[g]};
    routes_[{Medium::kHbm, Medium::kDram, g}] = {d2h[g], dram};
  }
  nvme_ = hw.nvme.drives > 0;
  if (nvme_) {
    const int read = add_link("nvme_read", hw.nvme.node_read_bandwidth(), hw.nvme.latency);
    const int write = add_link("nvme_write", hw.nvme.node_write_bandwidth(), hw.nvme.latency);
    routes_[{Medium::kNvme, Medium::kDram, 0}] = {read, dram};
    routes_[{Medium::kDram, Medium::kNvme, 0}] = {dram, write};
    for (int g = 0; g < gpus; ++g) {
      std::vector<int> load = hw.nvme.gpudirect ? std::vector<int>{read} : std::vector<int>{read, dram};
      load.push_back(h2d[g]);
      routes_[{Medium::kNvme, Medium::kHbm, g}] = load;
      std::vector<int> store{d2h[g]};
      if (!hw.nvme.gpudirect) store.push_back(dram);
      store.push_back(write);
      routes_[{Medium::kHbm, Medium::kNvme, g}] = store;
    }
  }
  remote_ = hw.network.bandwidth > 0;
  if (remote_) {
    const int net = add_link("network", hw.network.bandwidth, hw.network.latency);
    routes_[{Medium::kRemote, Medium::kDram, 0}] = {net, dram};
    routes_[{Medium::kDram, Medium::kRemote, 0}] = {dram, net};
    for (int g = 0; g < gpus; ++g) {
      routes_[{Medium::kRemote, Medium::kHbm, g}] = {net, h2d[g]};
      routes_[{Medium::kHbm, Medium::kRemote, g}] = {d2h[g], net};
    }
  }
}

bool NodeLinks::has(Medium medium) const {
  if (medium == Medium::kNvme) return nvme_;
  if (medium == Medium::kRemote) return remote_;
  return true;
}

const std::vector<int>& NodeLinks::route(Medium from, Medium to, int gpu) const {
  const bool through_gpu = from == Medium::kHbm || to == Medium::kHbm;
  auto found = routes_.find({from, to, through_gpu ? gpu : 0});
  if (found == routes_.end()) {
    throw ConfigError("no route from " + std::string(medium_name(from)) + " to " +
                      std::string(medium_name(to)) +
                      (through_gpu ? " through GPU " + std::to_string(gpu) : "") + " on this node");
  }
  return found->second;
}

const std::vector<int>& NodeLinks::route(const std::string& path,
                                         const std::map<std::string, Medium>& tier_media, int gpu) const {
  const size_t arrow = path.find("->");
  auto medium = [&](const std::string& tier) {
    auto found = tier_media.find(tier);
    if (arrow == std::string::npos || found == tier_media.end())
      throw ConfigError("transfer path '" + path + "' does not name two tiers as <from>-><to>");
    return found->second;
  };
  const Medium from = medium(path.substr(0, arrow));
  return route(from, medium(path.substr(arrow == std::string::npos ? 0 : arrow + 2)), gpu);
}

}  // namespace kvtier
