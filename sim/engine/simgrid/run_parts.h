// What a lone instance's simulation (simulation.cpp) and a cluster's (cluster_simulation.cpp) build the
// same way.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/core/checked_file.h"
#include "sim/core/transfer_log.h"
#include "sim/engine/run_cost.h"
#include "sim/engine/scenario.h"
#include "sim/engine/simgrid/serving_instance.h"
#include "sim/engine/workload.h"

namespace kvtier {

// A SimGrid engine that logs only critical messages, with the flow model of platform.h.
std::unique_ptr<simgrid::s4u::Engine> quiet_engine();

// What the summary says of the whole run beside its requests' figures (RequestSummary): window, scenario,
// workload, simulated time, engine steps, transfers and events (steps, transfers, arrivals and
// completions), the cache's traffic and its block events, the GPUs' busy time, the sessions that fit.
struct RunTotals {
  double end_s = 0;
  int64_t steps = 0;
  int64_t transfers = 0;
  double busy_s = 0;
  nlohmann::json cache_traffic;
};
void add_run_totals(nlohmann::json& summary, const Scenario& s, const WorkloadPlan& workload,
                    RunTotals totals);

// The instance's configuration: the scheduler's, and where each tier lives.
InstanceConfig instance_config(const Scenario& s);
// The scenario's hardware, with free transfers: links so fast and so close that every copy takes no
// simulated time.
HardwareConfig platform_hardware(const Scenario& s, bool free_transfers);
// The tiers' names, in order.
std::vector<std::string> tier_names(const Scenario& s);

// What the run did that its price and energy depend on (run_cost.h): from the summary, the bytes started on
// each link (a link named `nvme_read` or `nvme_write`, or `<node>.nvme_read`, counts as the drives'), and
// the time the GPUs ran steps.
RunUsage run_usage(const nlohmann::json& summary, const std::vector<std::string>& link_names,
                   const std::vector<double>& link_bytes, double busy_s);

// A transfers.csv and its writer.
struct TransfersFile {
  explicit TransfersFile(const std::string& path) : file(path), log(file) {}
  void close() {
    log.close();
    file.close();
  }
  CheckedFile file;
  TransfersCsvWriter log;
};

// Reads links' utilisation over sampling intervals: each call gives, per link, the bytes carried since
// the previous call over what the link's bandwidth could have carried, clamped to [0, 1].
class LinkSampler {
 public:
  // `carried` reads the bytes each link has carried so far; `bandwidth` gives link l's.
  LinkSampler(std::function<std::vector<double>()> carried, std::function<double(size_t)> bandwidth);
  std::vector<double> utilisation(double now);

 private:
  std::function<std::vector<double>()> carried_;
  std::function<double(size_t)> bandwidth_;
  std::vector<double> before_;
  double since_ = 0;
};

}  // namespace kvtier
