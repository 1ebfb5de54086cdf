#include "sim/engine/simulation.h"

#include <xbt/log.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <simgrid/s4u.hpp>

#include "sim/core/checked_file.h"
#include "sim/core/transfer_log.h"
#include "sim/engine/cluster_simulation.h"
#include "sim/engine/run_cost.h"
#include "sim/engine/simgrid/run_parts.h"
#include "sim/engine/simgrid/serving_instance.h"
#include "sim/engine/workload.h"

namespace sg4 = simgrid::s4u;

namespace kvtier {
namespace {

// Wakes every interval and records the instance's state, until the serving actor ends. A link's
// utilisation is its mean over the interval: the bytes it carried since the previous sample over what its
// bandwidth could have carried.
// `next_wake` is set before each sleep, for the instance, which runs alone beside the sampler.
void sample(const Scenario& s, ServingInstance& instance, const TieredCache& cache, Platform& platform,
            double& next_wake, const std::function<void(const TimeSample&)>& taken) {
  sg4::Actor::self()->daemonize();
  LinkSampler links([&] { return platform.carried_bytes(); },
                    [&](size_t l) { return platform.bandwidth(l); });
  while (true) {
    next_wake = sg4::Engine::get_clock() + s.sample_interval_s;
    sg4::this_actor::sleep_for(s.sample_interval_s);
    const double now = sg4::Engine::get_clock();
    TimeSample t = sample_state(now, cache, instance.state());
    t.link_utilisation = links.utilisation(now);
    taken(t);
  }
}

// The CSVs of a run with an output folder (which exists), opened before it starts and written as it goes;
// transfers.csv only when asked for (it has a row per stored block: gigabytes on a long run).
struct RunFiles {
  RunFiles(const std::string& dir, const std::vector<std::string>& tiers,
           const std::vector<std::string>& links, bool with_transfers)
      : requests_file(dir + "/requests.csv"),
        series_file(dir + "/timeseries.csv"),
        requests(requests_file, tiers),
        series(series_file, links, tiers) {
    if (with_transfers) transfers.emplace(dir + "/" + kTransfersFile);
  }
  TransfersCsvWriter* transfers_log() { return transfers ? &transfers->log : nullptr; }
  void close() {
    requests_file.close();
    series_file.close();
    if (transfers) transfers->close();
  }

  CheckedFile requests_file, series_file;
  RequestsCsvWriter requests;
  TimeseriesCsvWriter series;
  std::optional<TransfersFile> transfers;
};

}  // namespace

nlohmann::json simulate(const Scenario& s, const SimulationOptions& options) {
  if (s.cluster) return simulate_cluster(s, options);
  const std::unique_ptr<sg4::Engine> engine = quiet_engine();
  Platform platform(platform_hardware(s, options.free_transfers), s.gpus);
  TieredCache cache(s.tiers);
  WorkloadPlan workload =
      options.recorded_arrivals ? build_recorded_workload(s, *options.recorded_arrivals) : build_workload(s);
  const CostModel cost = instance_cost_model(s);

  const std::vector<std::string> tiers = tier_names(s);
  std::unique_ptr<RunFiles> files;
  if (!options.out_dir.empty()) {
    create_checked_folder(options.out_dir);
    files = std::make_unique<RunFiles>(options.out_dir, tiers, platform.link_names(), options.transfers_csv);
  }
  // Each request's figures as soon as it and every earlier one are final. No request completes after the
  // run ends, so that counting completions by the workload's window counts them by the summary's, the
  // least of it and the run's end.
  RequestSummary request_summary(tiers, s.slo, workload.window_s);
  RequestLog records([&](const RequestRecord& r) {
    request_summary.add(r);
    if (files) files->requests.write(r);
  });
  ServingInstance instance(instance_config(s), cost, platform, cache, *workload.driver, records,
                           files ? files->transfers_log() : nullptr);
  sg4::Host* host = engine->host_by_name("dram");
  std::optional<ProgressLine> progress;
  if (options.progress)
    progress.emplace(
        *options.progress,
        ProgressGoal{workload.requests, std::min(workload.window_s, options.progress->arrivals_end_s)});
  // The events so far, as the summary counts them, of the requests settled so far.
  auto so_far = [&] {
    const InstanceState& st = instance.state();
    return ProgressCount{instance.clock(), request_summary.requests_added(),
                         st.steps + st.transfers + instance.store_transfers() +
                             static_cast<int64_t>(records.size()) + request_summary.requests_completed()};
  };
  // The sampler's first sleep starts at 0, after the instance has begun.
  double next_sample_s = s.sample_interval_s;
  if (!options.simgrid_clock_only) instance.run_alone(&next_sample_s);
  sg4::Actor::create("serving", host, [&] {
    if (!progress) return instance.run();
    instance.run([&] { progress->update(so_far); });
  });
  sg4::Actor::create("sampler", host, [&] {
    sample(s, instance, cache, platform, next_sample_s, [&](const TimeSample& t) {
      if (files) files->series.write(t);
    });
  });
  engine->run();
  records.close();
  // The run ends with its last request; stores still in flight then are followed to their end for
  // transfers.csv, on a clock the summary no longer reads.
  const double end_s = sg4::Engine::get_clock();
  if (files) {
    sg4::Actor::create("stores", host, [&] { instance.finish_stores(); });
    engine->run();
    files->close();
  }
  nlohmann::json summary = request_summary.to_json(platform.link_names(), platform.link_bytes());
  const InstanceState& st = instance.state();
  add_run_totals(
      summary, s, workload,
      {end_s, st.steps, st.transfers + instance.store_transfers(), st.busy_s, cache_traffic_json(cache)});
  if (progress) {
    progress->finish({end_s, summary["requests_issued"].get<int64_t>(), summary["events"].get<int64_t>()});
  }
  if (s.cost)
    summary["cost"] = run_cost_json(
        s, *s.cost,
        run_usage(summary, platform.link_names(), platform.link_bytes(), instance.state().busy_s));
  return summary;
}

}  // namespace kvtier
