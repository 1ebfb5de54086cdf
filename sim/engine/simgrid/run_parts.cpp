#include "sim/engine/simgrid/run_parts.h"

#include <algorithm>

namespace kvtier {

std::unique_ptr<simgrid::s4u::Engine> quiet_engine() {
  static char name[] = "kvtier";
  static char quiet[] = "--log=root.thres:critical";
  int argc = 2;
  char* argv[] = {name, quiet, nullptr};
  auto engine = std::make_unique<simgrid::s4u::Engine>(&argc, argv);
  configure_flow_model(*engine);
  return engine;
}

void add_run_totals(nlohmann::json& summary, const Scenario& s, const WorkloadPlan& workload, RunTotals t) {
  summary["window_s"] = std::min(workload.window_s, t.end_s);
  summary["scenario"] = s.name;
  summary["workload"] = workload.description;
  summary["simulated_s"] = t.end_s;
  summary["engine_steps"] = t.steps;
  summary["transfers"] = t.transfers;
  summary["events"] = t.steps + t.transfers + summary["requests_issued"].get<int64_t>() +
                      summary["requests_completed"].get<int64_t>();
  int64_t cache_events = 0;
  for (const auto& flow : t.cache_traffic) cache_events += flow["blocks"].get<int64_t>();
  summary["cache_traffic"] = std::move(t.cache_traffic);
  summary["cache_events"] = cache_events;
  summary["gpu_busy_s"] = t.busy_s;
  summary["sessions_fit"] = sessions_fit_json(s);
}

InstanceConfig instance_config(const Scenario& s) {
  InstanceConfig c{scheduler_config(s), {}, {}, s.blocking_transfers, {}, {}};
  c.list_decodes = false;  // a simulated step needs only its time
  for (const TierSpec& tier : s.tiers) {
    c.tier_media.push_back(tier.medium);
    c.tier_names.push_back(tier.name);
  }
  return c;
}

HardwareConfig platform_hardware(const Scenario& s, bool free_transfers) {
  HardwareConfig hw = s.hardware;
  if (free_transfers) {
    for (LinkSpec* link : {&hw.pcie_h2d, &hw.pcie_d2h, &hw.network}) *link = {1e30, 0};
    hw.dram_bandwidth = 1e30;
    hw.nvme.read_bandwidth = hw.nvme.write_bandwidth = 1e30;
    hw.nvme.read_iops = hw.nvme.write_iops = 0;
    hw.nvme.store_read_cpu = hw.nvme.store_write_cpu = 0;
    hw.nvme.latency = 0;
  }
  return hw;
}

std::vector<std::string> tier_names(const Scenario& s) {
  std::vector<std::string> names;
  for (const TierSpec& t : s.tiers) names.push_back(t.name);
  return names;
}

RunUsage run_usage(const nlohmann::json& summary, const std::vector<std::string>& link_names,
                   const std::vector<double>& link_bytes, double busy_s) {
  RunUsage u;
  u.window_s = summary["window_s"].get<double>();
  u.gpu_busy_s = busy_s;
  auto is = [](const std::string& link, const std::string& name) {
    return link == name || link.ends_with("." + name);
  };
  for (size_t l = 0; l < link_names.size(); ++l) {
    if (is(link_names[l], "nvme_read")) u.nvme_read_bytes += link_bytes[l];
    if (is(link_names[l], "nvme_write")) u.nvme_write_bytes += link_bytes[l];
  }
  u.tokens_in_window = summary["tokens_in_window"].get<int64_t>();
  u.tokens_in_slo = summary["goodput_tokens"].get<int64_t>();
  return u;
}

LinkSampler::LinkSampler(std::function<std::vector<double>()> carried,
                         std::function<double(size_t)> bandwidth)
    : carried_(std::move(carried)), bandwidth_(std::move(bandwidth)), before_(carried_()) {}

std::vector<double> LinkSampler::utilisation(double now) {
  std::vector<double> carried = carried_();
  std::vector<double> busy;
  for (size_t l = 0; l < carried.size(); ++l) {
    double capacity = bandwidth_(l) * (now - since_);
    busy.push_back(std::clamp(capacity > 0 ? (carried[l] - before_[l]) / capacity : 0, 0.0, 1.0));
  }
  before_ = std::move(carried);
  since_ = now;
  return busy;
}

}  // namespace kvtier
