// The network between a cluster's nodes and between its GPUs: what its shared KV pool
// (sim/cluster/shared_pool.h) and a disaggregated cluster's KV handoffs cross.
//
// The pool is striped over the nodes that hold it, in their DRAM or their NVMe: the serving nodes, as
// Mooncake Store and HiCache's L3 spread KV over the cluster's hosts, or pool nodes of their own (hosts
// without GPUs, after the serving nodes); a copy to or from the pool moves an equal share to or from each. A
// share on the replica's own node crosses only that node's links (DRAM, or NVMe and DRAM, and the GPU's
// PCIe); a share on another node crosses that node's DRAM (or NVMe and DRAM), its NIC out, this node's NIC in
// and the GPU's PCIe (and the reverse for a store), the NICs being each node's `network` of the hardware
// file, one link each way. Between NICs, either one switch of full bisection, which adds no link of its own,
// or leaves of `nodes_per_leaf` nodes under a spine: a share between leaves also crosses its leaf's uplink up
// and the other leaf's down.
//
// A handoff moves a request's KV from the GPUs of one instance to those of another, each GPU its shard to
// its counterpart: within a node over the GPUs' peer links (NVLink, Infinity Fabric: `gpu.peer_bandwidth`,
// a link each way per GPU) or, where the hardware file gives none, over both GPUs' PCIe; between nodes
// over the sender's PCIe, its NIC out, the receiver's NIC in (and uplinks as above) and the receiver's
// PCIe, as GPUDirect RDMA does.
//
// Its transfers are metered over every link of the cluster: each node's links (as its NodeZone names them),
// every node's NICs ("n0.nic_in", "n0.nic_out", ...), every leaf's uplinks ("leaf0.up", "leaf0.down"),
// then with handoffs over peer links every GPU's ("n0.peer_out_0", "n0.peer_in_0", ...).
#pragma once

#include <map>
#include <memory>
#include <simgrid/s4u.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "sim/engine/simgrid/flow_meter.h"
#include "sim/engine/simgrid/platform.h"

namespace kvtier {

// How a cluster's nodes are connected, and where its pool lives.
struct FabricLayout {
  int nodes_per_leaf = 0;  // 0: one switch; otherwise leaves of that many nodes, each with `uplink` each way
  LinkSpec uplink;
  bool handoffs = false;  // routes from every GPU to every other, over peer links where the hardware has them
  int pool_nodes = 0;     // the last nodes, without GPUs, hold the pool; 0: every node holds a share
  Medium pool_medium = Medium::kDram;
};

class Fabric {
 public:
  // Adds the NICs and the routes between nodes to `zone`, which the caller seals. REQUIRES: every node
  // built from `hardware`, with its prefix ("n<index>." for serving nodes).
  Fabric(simgrid::s4u::NetZone* zone, std::vector<std::shared_ptr<const NodeZone>> nodes,
         const HardwareConfig& hardware, const FabricLayout& layout = {});

  // Starts moving `bytes` between the pool and GPUs first_gpu .. first_gpu + gpus - 1 of node `node`: into
  // them with `load`, out of them otherwise. Returns one Comm per node and GPU.
  std::vector<simgrid::s4u::CommPtr> transfer(int node, int first_gpu, int gpus, bool load, double bytes);
  // Starts moving `bytes` of KV from GPUs from_gpu .. from_gpu + gpus - 1 of node `from_node` to as many
  // from to_gpu of `to_node`, each GPU its share to its counterpart. REQUIRES: built with handoffs.
  std::vector<simgrid::s4u::CommPtr> handoff(int from_node, int from_gpu, int to_node, int to_gpu, int gpus,
                                             double bytes);
  // Counts what `comm` had carried, when it is one of the pool's; false otherwise.
  bool cancel(const simgrid::s4u::CommPtr& comm) { return meter_.cancel(comm); }

  const std::vector<std::string>& link_names() const { return link_names_; }
  const std::vector<double>& link_bytes() const { return meter_.link_bytes(); }
  std::vector<double> carried_bytes() { return meter_.carried_bytes(); }
  double bandwidth(size_t link) const { return bandwidths_[link]; }

 private:
  // Where node n's links start in link_names().
  size_t node_offset(int node) const { return node_offsets_[node]; }
  const std::vector<int>& route(int pool_node, int node, int gpu, bool load);
  std::vector<int> pool_side(int pool_node, bool load) const;  // a share's links on the node holding it
  int nic(int node, bool in) const;  // the index of a node's NIC in link_names_
  int leaf_of(int node) const { return nodes_per_leaf_ > 0 ? node / nodes_per_leaf_ : 0; }
  int uplink(int leaf, bool up) const;  // the index of a leaf's uplink in link_names_
  std::vector<int> across(int from_node, int to_node) const;  // NIC to NIC, through the spine if need be
  const std::vector<int>& gpu_route(int from_node, int from_gpu, int to_node, int to_gpu);
  void add_link(simgrid::s4u::NetZone* zone, const std::string& name, const LinkSpec& spec);

  std::vector<std::shared_ptr<const NodeZone>> nodes_;
  std::vector<size_t> node_offsets_;  // where each node's links start in link_names_
  size_t nics_ = 0, uplinks_ = 0;     // where the NICs and the uplinks start
  int nodes_per_leaf_;
  std::vector<int> pool_holders_;  // the nodes holding a share of the pool
  Medium pool_medium_;
  std::vector<std::string> link_names_;
  std::vector<double> bandwidths_;
  std::vector<simgrid::s4u::Link*> links_;  // as link_names_
  size_t peer_links_ = 0;  // where the GPUs' peer links start in link_names_; 0 when there are none
  // (pool node, node, gpu, load) -> the links the share crosses, indices into link_names_.
  std::map<std::tuple<int, int, int, bool>, std::vector<int>> routes_;
  // (from node, from gpu, to node, to gpu) -> the links a handoff's share crosses.
  std::map<std::tuple<int, int, int, int>, std::vector<int>> gpu_routes_;
  FlowMeter meter_;
};

}  // namespace kvtier
