#include "sim/engine/simgrid/pool_network.h"

namespace sg4 = simgrid::s4u;

namespace kvtier {

namespace {

int leaves(size_t nodes, int nodes_per_leaf) {
  return nodes_per_leaf > 0 ? static_cast<int>((nodes + nodes_per_leaf - 1) / nodes_per_leaf) : 0;
}

}  // namespace

PoolNetwork::PoolNetwork(sg4::NetZone* zone, std::vector<std::shared_ptr<const NodeZone>> nodes,
                         const HardwareConfig& hw, int nodes_per_leaf, const LinkSpec& uplink)
    : nodes_(std::move(nodes)),
      links_per_node_(nodes_.front()->link_names().size()),
      nodes_per_leaf_(nodes_per_leaf),
      meter_(nodes_.size() * (links_per_node_ + 2) + 2 * leaves(nodes_.size(), nodes_per_leaf)) {
  std::vector<sg4::Link*> links;
  for (const auto& node : nodes_) {
    for (size_t l = 0; l < links_per_node_; ++l) {
      link_names_.push_back(node->link_names()[l]);
      links.push_back(sg4::Link::by_name(link_names_.back()));
      bandwidths_.push_back(node->links().links()[l].bandwidth);
    }
  }
  for (size_t n = 0; n < nodes_.size(); ++n) {
    for (const std::string direction : {"nic_in", "nic_out"}) {
      link_names_.push_back(nodes_[n]->prefix() + direction);
      links.push_back(zone->create_link(link_names_.back(), hw.network.bandwidth)
                          ->set_latency(hw.network.latency)
                          ->seal());
      bandwidths_.push_back(hw.network.bandwidth);
    }
  }
  for (int leaf = 0; leaf < leaves(nodes_.size(), nodes_per_leaf_); ++leaf) {
    for (const std::string direction : {".up", ".down"}) {
      link_names_.push_back("leaf" + std::to_string(leaf) + direction);
      links.push_back(zone->create_link(link_names_.back(), uplink.bandwidth)->set_latency(uplink.latency)->seal());
      bandwidths_.push_back(uplink.bandwidth);
    }
  }
  auto in_route = [&](const std::vector<int>& route) {
    std::vector<sg4::LinkInRoute> out;
    for (int l : route) out.emplace_back(links[l]);
    return out;
  };
  // Between one node's DRAM and another's GPUs, both ways (a node's own routes are its zone's).
  const int count = static_cast<int>(nodes_.size());
  for (int pool_node = 0; pool_node < count; ++pool_node) {
    for (int node = 0; node < count; ++node) {
      if (pool_node == node) continue;
      for (int g = 0; g < nodes_[node]->gpus(); ++g) {
        auto* dram = nodes_[pool_node]->dram()->get_netpoint();
        auto* gpu = nodes_[node]->host(Medium::kHbm, g)->get_netpoint();
        zone->add_route(dram, gpu, nullptr, nullptr, in_route(route(pool_node, node, g, true)), false);
        zone->add_route(gpu, dram, nullptr, nullptr, in_route(route(pool_node, node, g, false)), false);
      }
    }
  }
}

int PoolNetwork::nic(int node, bool in) const {
  return static_cast<int>(nodes_.size() * links_per_node_) + 2 * node + (in ? 0 : 1);
}

int PoolNetwork::uplink(int leaf, bool up) const {
  return static_cast<int>(nodes_.size() * (links_per_node_ + 2)) + 2 * leaf + (up ? 0 : 1);
}

// A share between pool node `pool_node` and GPU `gpu` of `node`. On the node, a load crosses DRAM then the
// GPU's PCIe and a store the reverse; another node's share crosses that node's DRAM instead of this one's,
// both nodes' NICs, and between leaves the sender's uplink up and the receiver's down.
const std::vector<int>& PoolNetwork::route(int pool_node, int node, int gpu, bool load) {
  auto [it, added] = routes_.try_emplace({pool_node, node, gpu, load});
  std::vector<int>& links = it->second;
  if (!added) return links;
  const NodeLinks& local = nodes_[node]->links();
  const std::vector<int>& on_node =
      load ? local.route(Medium::kDram, Medium::kHbm, gpu) : local.route(Medium::kHbm, Medium::kDram, gpu);
  const int dram = load ? on_node.front() : on_node.back();
  auto at = [&](int n, int l) { return static_cast<int>(node_offset(n)) + l; };
  // From the sending node's NIC to the receiving node's, through the spine when their leaves differ.
  auto across = [&](int from, int to) {
    std::vector<int> hops = {nic(from, false)};
    if (leaf_of(from) != leaf_of(to)) {
      hops.push_back(uplink(leaf_of(from), true));
      hops.push_back(uplink(leaf_of(to), false));
    }
    hops.push_back(nic(to, true));
    return hops;
  };
  if (pool_node != node && load) {
    links.push_back(at(pool_node, dram));
    for (int hop : across(pool_node, node)) links.push_back(hop);
  }
  for (int l : on_node) {
    if (pool_node == node || l != dram) links.push_back(at(node, l));
  }
  if (pool_node != node && !load) {
    for (int hop : across(node, pool_node)) links.push_back(hop);
    links.push_back(at(pool_node, dram));
  }
  return links;
}

std::vector<sg4::CommPtr> PoolNetwork::transfer(int node, int first_gpu, int gpus, bool load, double bytes) {
  std::vector<sg4::CommPtr> comms;
  const double share = bytes / (static_cast<double>(nodes_.size()) * gpus);
  auto size = static_cast<uint64_t>(share);
  for (int pool_node = 0; pool_node < static_cast<int>(nodes_.size()); ++pool_node) {
    for (int g = first_gpu; g < first_gpu + gpus; ++g) {
      sg4::Host* dram = nodes_[pool_node]->dram();
      sg4::Host* gpu = nodes_[node]->host(Medium::kHbm, g);
      comms.push_back(load ? sg4::Comm::sendto_async(dram, gpu, size)
                           : sg4::Comm::sendto_async(gpu, dram, size));
      meter_.start(comms.back(), route(pool_node, node, g, load), share, static_cast<double>(size));
    }
  }
  return comms;
}

}  // namespace kvtier
