#include "sim/engine/simgrid/fabric.h"

namespace sg4 = simgrid::s4u;

namespace kvtier {

namespace {

int leaves(size_t nodes, int nodes_per_leaf) {
  return nodes_per_leaf > 0 ? static_cast<int>((nodes + nodes_per_leaf - 1) / nodes_per_leaf) : 0;
}

}  // namespace

Fabric::Fabric(sg4::NetZone* zone, std::vector<std::shared_ptr<const NodeZone>> nodes,
               const HardwareConfig& hw, const FabricLayout& layout)
    : nodes_(std::move(nodes)),
      nodes_per_leaf_(layout.nodes_per_leaf),
      pool_medium_(layout.pool_medium),
      meter_(0) {
  const int count = static_cast<int>(nodes_.size());
  for (int n = layout.pool_nodes > 0 ? count - layout.pool_nodes : 0; n < count; ++n)
    pool_holders_.push_back(n);
  for (const auto& node : nodes_) {
    node_offsets_.push_back(link_names_.size());
    for (size_t l = 0; l < node->link_names().size(); ++l) {
      link_names_.push_back(node->link_names()[l]);
      links_.push_back(sg4::Link::by_name(link_names_.back()));
      bandwidths_.push_back(node->links().links()[l].bandwidth);
    }
  }
  nics_ = link_names_.size();
  for (const auto& node : nodes_) {
    for (const std::string direction : {"nic_in", "nic_out"})
      add_link(zone, node->prefix() + direction, hw.network);
  }
  uplinks_ = link_names_.size();
  for (int leaf = 0; leaf < leaves(nodes_.size(), nodes_per_leaf_); ++leaf) {
    for (const std::string direction : {".up", ".down"})
      add_link(zone, "leaf" + std::to_string(leaf) + direction, layout.uplink);
  }
  if (layout.handoffs && hw.gpu.peer_bandwidth > 0) {
    peer_links_ = link_names_.size();
    for (const auto& node : nodes_) {
      for (int g = 0; g < node->gpus(); ++g) {
        for (const std::string direction : {"peer_out_", "peer_in_"})
          add_link(zone, node->prefix() + direction + std::to_string(g), {hw.gpu.peer_bandwidth, 0});
      }
    }
  }
  auto in_route = [&](const std::vector<int>& route) {
    std::vector<sg4::LinkInRoute> out;
    for (int l : route) out.emplace_back(links_[l]);
    return out;
  };
  meter_ = FlowMeter(link_names_.size());
  // Between a node holding the pool and another's GPUs, both ways (a node's own routes are its zone's).
  for (int pool_node : pool_holders_) {
    for (int node = 0; node < count; ++node) {
      if (pool_node == node) continue;
      for (int g = 0; g < nodes_[node]->gpus(); ++g) {
        auto* held = nodes_[pool_node]->host(pool_medium_, 0)->get_netpoint();
        auto* gpu = nodes_[node]->host(Medium::kHbm, g)->get_netpoint();
        zone->add_route(held, gpu, nullptr, nullptr, in_route(route(pool_node, node, g, true)), false);
        zone->add_route(gpu, held, nullptr, nullptr, in_route(route(pool_node, node, g, false)), false);
      }
    }
  }
  if (!layout.handoffs) return;
  // From every GPU to every other.
  for (int from = 0; from < count; ++from) {
    for (int to = 0; to < count; ++to) {
      for (int a = 0; a < nodes_[from]->gpus(); ++a) {
        for (int b = 0; b < nodes_[to]->gpus(); ++b) {
          if (from == to && a == b) continue;
          zone->add_route(nodes_[from]->host(Medium::kHbm, a)->get_netpoint(),
                          nodes_[to]->host(Medium::kHbm, b)->get_netpoint(), nullptr, nullptr,
                          in_route(gpu_route(from, a, to, b)), false);
        }
      }
    }
  }
}

void Fabric::add_link(sg4::NetZone* zone, const std::string& name, const LinkSpec& spec) {
  link_names_.push_back(name);
  links_.push_back(zone->create_link(name, spec.bandwidth)->set_latency(spec.latency)->seal());
  bandwidths_.push_back(spec.bandwidth);
}

int Fabric::nic(int node, bool in) const {
  return static_cast<int>(nics_) + 2 * node + (in ? 0 : 1);
}

int Fabric::uplink(int leaf, bool up) const {
  return static_cast<int>(uplinks_) + 2 * leaf + (up ? 0 : 1);
}

// A share between the pool's part on node `pool_node` and GPU `gpu` of `node`. On the node, a load crosses
// the node's route from the pool's medium to the GPU (DRAM, or NVMe and DRAM, then the GPU's PCIe) and a
// store the reverse; another node's share crosses that node's DRAM (or NVMe and DRAM) instead, both nodes'
// NICs, between leaves the sender's uplink up and the receiver's down, and the GPU's PCIe.
const std::vector<int>& Fabric::route(int pool_node, int node, int gpu, bool load) {
  auto [it, added] = routes_.try_emplace({pool_node, node, gpu, load});
  std::vector<int>& links = it->second;
  if (!added) return links;
  auto at = [&](int n, int l) { return static_cast<int>(node_offset(n)) + l; };
  const NodeLinks& local = nodes_[node]->links();
  if (pool_node == node) {
    for (int l :
         load ? local.route(pool_medium_, Medium::kHbm, gpu) : local.route(Medium::kHbm, pool_medium_, gpu))
      links.push_back(at(node, l));
    return links;
  }
  if (load) {
    links = pool_side(pool_node, true);
    for (int hop : across(pool_node, node)) links.push_back(hop);
    links.push_back(at(node, local.route(Medium::kDram, Medium::kHbm, gpu).back()));
  } else {
    links.push_back(at(node, local.route(Medium::kHbm, Medium::kDram, gpu).front()));
    for (int hop : across(node, pool_node)) links.push_back(hop);
    for (int l : pool_side(pool_node, false)) links.push_back(l);
  }
  return links;
}

// The links a share crosses on the node holding it, as indices into link_names_: its DRAM, or from its
// NVMe through DRAM (to it, with `load` false).
std::vector<int> Fabric::pool_side(int pool_node, bool load) const {
  const NodeLinks& held = nodes_[pool_node]->links();
  std::vector<int> links;
  if (pool_medium_ == Medium::kDram) {
    for (size_t l = 0; l < held.links().size(); ++l) {
      if (held.links()[l].name == "dram") links.push_back(static_cast<int>(node_offset(pool_node) + l));
    }
    return links;
  }
  for (int l : load ? held.route(pool_medium_, Medium::kDram) : held.route(Medium::kDram, pool_medium_))
    links.push_back(static_cast<int>(node_offset(pool_node)) + l);
  return links;
}

// From the sending node's NIC to the receiving node's, through the spine when their leaves differ.
std::vector<int> Fabric::across(int from, int to) const {
  std::vector<int> hops = {nic(from, false)};
  if (leaf_of(from) != leaf_of(to)) {
    hops.push_back(uplink(leaf_of(from), true));
    hops.push_back(uplink(leaf_of(to), false));
  }
  hops.push_back(nic(to, true));
  return hops;
}

// GPU to GPU: on one node over their peer links, or without them over both GPUs' PCIe; between nodes over
// the sender's PCIe, the NICs and the receiver's PCIe.
const std::vector<int>& Fabric::gpu_route(int from_node, int from_gpu, int to_node, int to_gpu) {
  auto [it, added] = gpu_routes_.try_emplace({from_node, from_gpu, to_node, to_gpu});
  std::vector<int>& links = it->second;
  if (!added) return links;
  if (from_node == to_node && peer_links_ > 0) {
    const size_t per_node = 2 * static_cast<size_t>(nodes_[from_node]->gpus());
    const auto peer = [&](int gpu, bool in) {
      return static_cast<int>(peer_links_ + from_node * per_node + 2 * static_cast<size_t>(gpu) +
                              (in ? 1 : 0));
    };
    links = {peer(from_gpu, false), peer(to_gpu, true)};
    return links;
  }
  const int d2h = nodes_[from_node]->links().route(Medium::kHbm, Medium::kDram, from_gpu).front();
  const int h2d = nodes_[to_node]->links().route(Medium::kDram, Medium::kHbm, to_gpu).back();
  links.push_back(static_cast<int>(node_offset(from_node)) + d2h);
  if (from_node != to_node) {
    for (int hop : across(from_node, to_node)) links.push_back(hop);
  }
  links.push_back(static_cast<int>(node_offset(to_node)) + h2d);
  return links;
}

std::vector<sg4::CommPtr> Fabric::handoff(int from_node, int from_gpu, int to_node, int to_gpu, int gpus,
                                          double bytes) {
  std::vector<sg4::CommPtr> comms;
  const double share = bytes / gpus;
  auto size = static_cast<uint64_t>(share);
  for (int g = 0; g < gpus; ++g) {
    comms.push_back(sg4::Comm::sendto_async(nodes_[from_node]->host(Medium::kHbm, from_gpu + g),
                                            nodes_[to_node]->host(Medium::kHbm, to_gpu + g), size));
    meter_.start(comms.back(), gpu_route(from_node, from_gpu + g, to_node, to_gpu + g), share,
                 static_cast<double>(size));
  }
  return comms;
}

std::vector<sg4::CommPtr> Fabric::transfer(int node, int first_gpu, int gpus, bool load, double bytes) {
  std::vector<sg4::CommPtr> comms;
  const double share = bytes / (static_cast<double>(pool_holders_.size()) * gpus);
  auto size = static_cast<uint64_t>(share);
  for (int pool_node : pool_holders_) {
    for (int g = first_gpu; g < first_gpu + gpus; ++g) {
      sg4::Host* held = nodes_[pool_node]->host(pool_medium_, 0);
      sg4::Host* gpu = nodes_[node]->host(Medium::kHbm, g);
      comms.push_back(load ? sg4::Comm::sendto_async(held, gpu, size)
                           : sg4::Comm::sendto_async(gpu, held, size));
      meter_.start(comms.back(), route(pool_node, node, g, load), share, static_cast<double>(size));
    }
  }
  return comms;
}

}  // namespace kvtier
