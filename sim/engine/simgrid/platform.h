// The SimGrid platform of one serving instance, built in code from a hardware file.
//
// Every place KV can live is a SimGrid host, and every path between them a route of the node's links
// (sim/core/node_links.h: dram, pcie_h2d_i, pcie_d2h_i, nvme_read, nvme_write, network), so that transfers
// on the same link share its bandwidth as SimGrid's flow model shares it. The SSD is a link, not a SimGrid
// Disk: in SimGrid 3.32 a Disk activity in flight beside Comms makes the engine quadratic in the number of
// past activities. The network model is CM02 without cross-traffic, so one transfer alone takes exactly
// latency + bytes / bandwidth (the default LV08 is calibrated for TCP and would inflate both).
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "sim/core/hardware.h"
#include "sim/core/medium.h"
#include "sim/core/node_links.h"
#include "sim/engine/simgrid/flow_meter.h"

namespace kvtier {

// Selects CM02 without cross-traffic. REQUIRES: called before the platform is built.
void configure_flow_model(simgrid::s4u::Engine& engine);

// A node's hosts (dram, gpu0..gpuN-1, nvme, remote), links and routes in a SimGrid zone, every name
// prefixed (a cluster's nodes are "n0.", "n1.", ...; a lone instance's node has no prefix).
class NodeZone {
 public:
  // Adds a node of `gpus` GPUs of `hardware` to `zone`, which the caller seals.
  NodeZone(simgrid::s4u::NetZone* zone, const HardwareConfig& hardware, int gpus, const std::string& prefix);

  const NodeLinks& links() const { return links_; }
  simgrid::s4u::Host* host(Medium medium, int gpu) const;
  simgrid::s4u::Host* dram() const { return dram_; }
  const std::vector<std::string>& link_names() const { return link_names_; }
  int gpus() const { return static_cast<int>(gpu_hosts_.size()); }
  const std::string& prefix() const { return prefix_; }

 private:
  std::string prefix_;
  NodeLinks links_;
  std::vector<std::string> link_names_;
  simgrid::s4u::Host* dram_ = nullptr;
  simgrid::s4u::Host* nvme_ = nullptr;
  simgrid::s4u::Host* remote_ = nullptr;
  std::vector<simgrid::s4u::Host*> gpu_hosts_;
};

class Fabric;

// What one serving instance moves over its node: transfers between media on its GPUs, and the bytes it
// put on each of the node's links (other instances of the node count their own).
class Platform {
 public:
  // Builds the zone of a node of `gpus` GPUs (tensor parallel) of `hardware`, all of them the instance's.
  Platform(const HardwareConfig& hardware, int gpus);
  // The instance on GPUs first_gpu .. first_gpu + gpus - 1 of a node built by the caller.
  Platform(std::shared_ptr<const NodeZone> node, int first_gpu, int gpus);

  // In a cluster with a shared KV pool: the instance is on node `node`, and copies to and from the remote
  // medium go to the pool (fabric.h), which meters them. REQUIRES: the instance has no remote tier.
  void use_pool(Fabric* pool, int node) {
    pool_ = pool;
    node_index_ = node;
  }

  // Starts moving `bytes` from one medium to another. A transfer that starts or ends in HBM is split
  // evenly over the instance's GPUs (each holds its shard of every layer), so it returns one Comm per GPU
  // (per GPU and node, to and from a shared pool).
  std::vector<simgrid::s4u::CommPtr> transfer(Medium from, Medium to, double bytes);

  // Cancels a transfer this platform started, counting what it had carried (a cancelled Comm no longer
  // says how far it got).
  void cancel(const std::vector<simgrid::s4u::CommPtr>& comms);
  // The least time a transfer of `bytes` between the media can take: every shard alone on its route, at
  // the slowest link's bandwidth. Contention and latency only add to it. 0 for the shared pool's routes.
  double least_transfer_seconds(Medium from, Medium to, double bytes) const;
  // A time before which such a transfer started at `start_s` cannot have landed: the least time, less a
  // margin for SimGrid ending a flow within its precision of the exact time.
  double earliest_landing_s(Medium from, Medium to, double bytes, double start_s) const;

  // Names of the node's links in a fixed order, and the bytes of the transfers this instance started on
  // each so far (a transfer counts whole when it starts, a cancelled one too).
  const std::vector<std::string>& link_names() const { return node_->link_names(); }
  const std::vector<double>& link_bytes() const { return meter_.link_bytes(); }
  // Bytes this instance's transfers have actually carried over each link up to now: the progress of every
  // transfer over it, so that the difference between two readings over bandwidth x elapsed time is the
  // link's mean utilisation between them (the time-series' util_ columns).
  std::vector<double> carried_bytes() { return meter_.carried_bytes(); }
  double bandwidth(size_t link) const { return node_->links().links()[link].bandwidth; }

  int gpus() const { return gpus_; }
  const NodeZone& node() const { return *node_; }

 private:
  // The shared pool carries the transfer (its own fabric, not this node's links).
  bool through_pool(Medium from, Medium to) const;
  // A transfer to or from HBM moves one shard per GPU over that GPU's route; others move whole.
  int shards(Medium from, Medium to) const;

  std::shared_ptr<const NodeZone> node_;
  int first_gpu_ = 0;
  int gpus_ = 0;
  FlowMeter meter_;
  Fabric* pool_ = nullptr;
  int node_index_ = 0;
};

// Runs `body` as the only actor on a fresh engine and platform, in a child process (isolated_run.h),
// and returns the simulated time at which it ended: how long the platform takes for what `body` moves.
double time_on_platform(const HardwareConfig& hardware, int gpus, const std::function<void(Platform&)>& body);

}  // namespace kvtier
