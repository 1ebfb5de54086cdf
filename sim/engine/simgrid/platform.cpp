#include "sim/engine/simgrid/platform.h"

#include "sim/core/config.h"
#include "sim/engine/isolated_run.h"

namespace sg4 = simgrid::s4u;

namespace kvtier {

void configure_flow_model(sg4::Engine& engine) {
  engine.set_config("network/model:CM02");
  engine.set_config("network/crosstraffic:0");
}

int Platform::add_link(sg4::NetZone* zone, const std::string& name, double bandwidth, double latency) {
  sg4::Link* link = zone->create_link(name, bandwidth)->set_latency(latency)->seal();
  links_.push_back(link);
  link_names_.push_back(name);
  link_bytes_.push_back(0);
  return static_cast<int>(links_.size()) - 1;
}

void Platform::add_route(sg4::NetZone* zone, sg4::Host* from, sg4::Host* to, const std::vector<int>& links) {
  std::vector<sg4::LinkInRoute> in_route;
  for (int l : links) in_route.emplace_back(links_[l]);
  zone->add_route(from->get_netpoint(), to->get_netpoint(), nullptr, nullptr, in_route, false);
  routes_[{from, to}] = Route{links};
}

Platform::Platform(const HardwareConfig& hw, int gpus) {
  if (gpus <= 0 || gpus > hw.gpu.count) {
    throw ConfigError("instance.gpus: " + std::to_string(gpus) + " GPUs do not fit a node of " +
                      std::to_string(hw.gpu.count));
  }
  sg4::NetZone* zone = sg4::create_full_zone("node");
  dram_ = zone->create_host("dram", 1.0)->seal();
  int dram = add_link(zone, "dram", hw.dram_bandwidth, 0);
  for (int g = 0; g < gpus; ++g) {
    std::string id = std::to_string(g);
    sg4::Host* gpu = zone->create_host("gpu" + id, 1.0)->seal();
    gpu_hosts_.push_back(gpu);
    int h2d = add_link(zone, "pcie_h2d_" + id, hw.pcie_h2d.bandwidth, hw.pcie_h2d.latency);
    int d2h = add_link(zone, "pcie_d2h_" + id, hw.pcie_d2h.bandwidth, hw.pcie_d2h.latency);
    add_route(zone, dram_, gpu, {dram, h2d});
    add_route(zone, gpu, dram_, {d2h, dram});
  }
  if (hw.nvme.drives > 0) {
    nvme_ = zone->create_host("nvme", 1.0)->seal();
    int read = add_link(zone, "nvme_read", hw.nvme.drives * hw.nvme.read_bandwidth, hw.nvme.latency);
    int write = add_link(zone, "nvme_write", hw.nvme.drives * hw.nvme.write_bandwidth, hw.nvme.latency);
    add_route(zone, nvme_, dram_, {read, dram});
    add_route(zone, dram_, nvme_, {dram, write});
    for (int g = 0; g < gpus; ++g) {
      std::vector<int> load = hw.nvme.gpudirect ? std::vector<int>{read} : std::vector<int>{read, dram};
      load.push_back(routes_.at({dram_, gpu_hosts_[g]}).links.back());
      add_route(zone, nvme_, gpu_hosts_[g], load);
      std::vector<int> store{routes_.at({gpu_hosts_[g], dram_}).links.front()};
      if (!hw.nvme.gpudirect) store.push_back(dram);
      store.push_back(write);
      add_route(zone, gpu_hosts_[g], nvme_, store);
    }
  }
  if (hw.network.bandwidth > 0) {
    remote_ = zone->create_host("remote", 1.0)->seal();
    int net = add_link(zone, "network", hw.network.bandwidth, hw.network.latency);
    add_route(zone, remote_, dram_, {net, dram});
    add_route(zone, dram_, remote_, {dram, net});
    for (int g = 0; g < gpus; ++g) {
      add_route(zone, remote_, gpu_hosts_[g], {net, routes_.at({dram_, gpu_hosts_[g]}).links.back()});
      add_route(zone, gpu_hosts_[g], remote_, {routes_.at({gpu_hosts_[g], dram_}).links.front(), net});
    }
  }
  zone->seal();
}

sg4::Host* Platform::host_of(Medium medium, int gpu) const {
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

const Platform::Route& Platform::route(sg4::Host* from, sg4::Host* to) const {
  auto it = routes_.find({from, to});
  if (it == routes_.end()) {
    throw ConfigError("no route from " + from->get_name() + " to " + to->get_name() + " on this platform");
  }
  return it->second;
}

std::vector<sg4::CommPtr> Platform::transfer(Medium from, Medium to, double bytes) {
  bool per_gpu = from == Medium::kHbm || to == Medium::kHbm;
  int shards = per_gpu ? gpus() : 1;
  std::vector<sg4::CommPtr> comms;
  for (int g = 0; g < shards; ++g) {
    sg4::Host* src = host_of(from, g);
    sg4::Host* dst = host_of(to, g);
    double shard = bytes / shards;
    for (int l : route(src, dst).links) link_bytes_[l] += shard;
    comms.push_back(sg4::Comm::sendto_async(src, dst, static_cast<uint64_t>(shard)));
  }
  return comms;
}

std::vector<double> Platform::link_utilisation() const {
  std::vector<double> out;
  for (const sg4::Link* link : links_) out.push_back(link->get_usage() / link->get_bandwidth());
  return out;
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
