#include "sim/engine/simgrid/platform.h"

#include <algorithm>
#include <limits>

#include "sim/core/config.h"
#include "sim/engine/isolated_run.h"
#include "sim/engine/simgrid/fabric.h"

namespace sg4 = simgrid::s4u;

namespace kvtier {

void configure_flow_model(sg4::Engine& engine) {
  engine.set_config("network/model:CM02");
  engine.set_config("network/crosstraffic:0");
  // CM02 caps a flow at its TCP window over twice the route's latency (4 MiB by default: 19 GB/s at a
  // store batch's calibrated 110 us). PCIe, NVMe and fabric links have no such window: a transfer takes
  // latency + bytes / its share of bandwidth, whatever the latency.
  engine.set_config("network/TCP-gamma:1e100");
}

NodeZone::NodeZone(sg4::NetZone* zone, const HardwareConfig& hw, int gpus, const std::string& prefix)
    : prefix_(prefix), links_(hw, gpus) {
  dram_ = zone->create_host(prefix + "dram", 1.0)->seal();
  for (int g = 0; g < gpus; ++g)
    gpu_hosts_.push_back(zone->create_host(prefix + "gpu" + std::to_string(g), 1.0)->seal());
  if (links_.has(Medium::kNvme)) nvme_ = zone->create_host(prefix + "nvme", 1.0)->seal();
  if (links_.has(Medium::kRemote)) remote_ = zone->create_host(prefix + "remote", 1.0)->seal();
  std::vector<sg4::Link*> links;
  for (const NodeLink& l : links_.links()) {
    links.push_back(zone->create_link(prefix + l.name, l.bandwidth)->set_latency(l.latency)->seal());
    link_names_.push_back(prefix + l.name);
  }
  for (const auto& [key, route] : links_.routes()) {
    const auto& [from, to, gpu] = key;
    std::vector<sg4::LinkInRoute> in_route;
    for (int l : route) in_route.emplace_back(links[l]);
    zone->add_route(host(from, gpu)->get_netpoint(), host(to, gpu)->get_netpoint(), nullptr, nullptr,
                    in_route, false);
  }
}

sg4::Host* NodeZone::host(Medium medium, int gpu) const {
  sg4::Host* host = nullptr;
  switch (medium) {
    case Medium::kHbm:
      host = gpu_hosts_[gpu];
      break;
    case Medium::kDram:
      host = dram_;
      break;
    case Medium::kNvme:
      host = nvme_;
      break;
    case Medium::kRemote:
      host = remote_;
      break;
  }
  if (host == nullptr) throw ConfigError("the hardware file has no NVMe drives or network for this tier");
  return host;
}

namespace {

std::shared_ptr<const NodeZone> lone_node(const HardwareConfig& hw, int gpus) {
  sg4::NetZone* zone = sg4::create_full_zone("node");
  auto node = std::make_shared<const NodeZone>(zone, hw, gpus, "");
  zone->seal();
  return node;
}

}  // namespace

Platform::Platform(const HardwareConfig& hw, int gpus) : Platform(lone_node(hw, gpus), 0, gpus) {}

Platform::Platform(std::shared_ptr<const NodeZone> node, int first_gpu, int gpus)
    : node_(std::move(node)), first_gpu_(first_gpu), gpus_(gpus), meter_(node_->link_names().size()) {}

bool Platform::through_pool(Medium from, Medium to) const {
  return pool_ != nullptr && (from == Medium::kRemote || to == Medium::kRemote);
}

int Platform::shards(Medium from, Medium to) const {
  return from == Medium::kHbm || to == Medium::kHbm ? gpus_ : 1;
}

std::vector<sg4::CommPtr> Platform::transfer(Medium from, Medium to, double bytes) {
  if (through_pool(from, to))
    return pool_->transfer(node_index_, first_gpu_, gpus_, from == Medium::kRemote, bytes);
  const int shards = this->shards(from, to);
  std::vector<sg4::CommPtr> comms;
  for (int g = 0; g < shards; ++g) {
    const int gpu = first_gpu_ + g;
    const double shard = bytes / shards;
    auto size = static_cast<uint64_t>(shard);
    comms.push_back(sg4::Comm::sendto_async(node_->host(from, gpu), node_->host(to, gpu), size));
    meter_.start(comms.back(), node_->links().route(from, to, gpu), shard, static_cast<double>(size));
  }
  return comms;
}

double Platform::least_transfer_seconds(Medium from, Medium to, double bytes) const {
  if (through_pool(from, to)) return 0;
  const int shards = this->shards(from, to);
  double least = 0;
  for (int g = 0; g < shards; ++g) {
    double slowest = std::numeric_limits<double>::infinity();
    for (int l : node_->links().route(from, to, first_gpu_ + g)) slowest = std::min(slowest, bandwidth(l));
    least = std::max(least, bytes / shards / slowest);
  }
  return least;
}

double Platform::earliest_landing_s(Medium from, Medium to, double bytes, double start_s) const {
  constexpr double kMargin = 1e-6;  // relative to the least time, and in seconds
  return start_s + least_transfer_seconds(from, to, bytes) * (1 - kMargin) - kMargin;
}

void Platform::cancel(const std::vector<sg4::CommPtr>& comms) {
  for (const sg4::CommPtr& c : comms) {
    if (!meter_.cancel(c) && pool_ != nullptr) pool_->cancel(c);
    c->cancel();
  }
}

double time_on_platform(const HardwareConfig& hardware, int gpus,
                        const std::function<void(Platform&)>& body) {
  return run_isolated([&] {
           int argc = 1;
           char name[] = "kvtier";
           char* argv[] = {name, nullptr};
           sg4::Engine engine(&argc, argv);
           configure_flow_model(engine);
           Platform platform(hardware, gpus);
           sg4::Actor::create("probe", engine.host_by_name("dram"), [&] { body(platform); });
           engine.run();
           return nlohmann::json(sg4::Engine::get_clock());
         })
      .get<double>();
}

}  // namespace kvtier
